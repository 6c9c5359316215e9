/// Remolo: a smooth pointer over Wi-Fi.
public enum Remolo {
    public static let version = "0.1.0"
}
