"""What the three drivers (cdp.py, bidi.py, webdriver.py) share: waiting
for an expression on the page, and saying what the page says when it does
not come true."""
import time


class PageWait:
    """Needs `eval(expression)`; `poll` is what a wait asks each time (a
    driver whose eval swallows the page's errors sets it to one that raises)."""

    def poll(self, expression):
        return self.eval(expression)

    def wait_for(self, expression, timeout=10.0, what=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                v = self.poll(expression)
                if v:
                    return v
            except RuntimeError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what or expression}; page says: "
                             f"{self.eval('window.remolo && [remolo.state, remolo.detail]')}")
