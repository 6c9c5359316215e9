import RemoloSession
import RemoloPlayout
import RemoloReceiver
import RemoloWeb

// The receiver and the web page's data-channel endpoint, joined: the
// receiver signals through the endpoint without linking it
// (Remolo.DataChannelHost; docs/protocol.md, "The data channel").

/// Starts the endpoint on the web port's number over UDP and attaches it
/// to the receiver. nil (and the page stays on its WebSocket) when the
/// UDP port cannot be had; `say` tells why and how to fix it.
func startDataChannels(_ rx: Receiver, webHost: String, webPort: UInt16, target: String,
                       say: (String) -> Void) -> DataChannelEndpoint? {
    let endpoint: DataChannelEndpoint
    do {
        endpoint = try DataChannelEndpoint(host: webHost, port: webPort, receiverHost: target, receiverPort: rx.port)
    } catch {
        say("note: no data channel for the phone page (\(error)); its motion rides the WebSocket (TCP)")
        return nil
    }
    let addresses = DataChannelEndpoint.hostAddresses(listen: webHost, max: ChannelAnswer.maxAddresses)
    rx.attachDataChannels(DataChannelHost(
        answer: { id, offer in
            do throws(DataChannelRefusal) {
                let c = try endpoint.add(session: id.bytes, ufrag: offer.ufrag, password: offer.password,
                                         fingerprint: offer.fingerprint)
                return ChannelAnswer(status: .ready, port: c.port, fingerprint: c.fingerprint, ufrag: c.ufrag,
                                     password: c.password,
                                     addresses: addresses.map { $0.count == 4 ? .v4($0) : .v6($0) })
            } catch {
                return .refused(error == .busy ? .busy : .badOffer)
            }
        },
        remove: { id in endpoint.remove(session: id.bytes) },
        sessionFields: { id in endpoint.peer(session: id.bytes)?.jsonFields },
        json: { endpoint.json }))
    say("data channel: UDP port \(endpoint.port) (the page's motion; open it in a firewall beside TCP \(webPort))")
    return endpoint
}
