"""Headless Chromium driven over the DevTools protocol, for the page's tests (page_test.py) and its bench
(bench/web_training.py): open a page, evaluate JavaScript in it, click, wait, and log every request the
page and its workers make.

Needs Debian's chromium and python3-websocket (dev/setup installs both); run by /usr/bin/python3.
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

import websocket  # Debian's python3-websocket

# As the other browser tests start it (tests/report/chromium.sh): no background traffic of its own.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-port=0"]


def browser_path():
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One fresh browser (its own profile) with one page. Every request of the page and of its workers
    is paused on its way out: the page's own file (or a file opened since, open()) goes on, anything
    else is refused, and all are listed in self.requests."""

    def __init__(self, url, work, width=1280, height=2000):
        self.profile = tempfile.mkdtemp(prefix="profile-", dir=work)
        self.log = open(os.path.join(work, "chromium.log"), "a")
        self.proc = subprocess.Popen([browser_path(), *FLAGS, f"--window-size={width},{height}",
                                      f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=self.log, stderr=self.log)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not (os.path.exists(port_file) and len(open(port_file).read().split()) >= 2):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"chromium did not start (see {work}/chromium.log)")
            time.sleep(0.1)
        port, path = open(port_file).read().split()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=60)
        self.next_id = 0
        self.requests = []        # every URL requested, by the page or a worker
        self.refused = []         # the ones refused (anything but the page itself)
        self.errors = []          # console errors and uncaught exceptions
        self.urls = set()  # the files opened, as requested: without the fragment
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.watch(self.session)
        self.send("Target.setAutoAttach", self.session, autoAttach=True, waitForDebuggerOnStart=True, flatten=True)
        self.send("Page.enable", self.session)
        self.set_viewport(width, height)
        self.open(url)

    def watch(self, session, worker=False):
        """Logs the session's requests and collects its console errors; a page's requests are paused too
        (a worker has no Fetch domain: its requests are paused by its page's)."""
        if worker:
            for method in ("Network.enable", "Runtime.enable"):
                self.post(method, session)
            return
        self.send("Network.enable", session)
        self.send("Fetch.enable", session, patterns=[{"urlPattern": "*"}])
        self.send("Runtime.enable", session)

    def post(self, method, session=None, **params):
        """Sends a command without waiting for its answer (from within an event's handling)."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))

    def send(self, method, session=None, **params):
        """Sends a command and waits for its answer, handling the events that come first."""
        self.post(method, session, **params)
        wanted = self.next_id
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == wanted:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.handle(reply)

    def handle(self, message):
        if "id" in message:  # the answer to a posted command
            if "error" in message:
                self.errors.append(f"DevTools: {message['error']}")
            return
        method, params, session = message.get("method"), message.get("params", {}), message.get("sessionId")
        if method == "Target.attachedToTarget":  # a worker: watched too, then let run
            child = params["sessionId"]
            self.watch(child, worker=True)
            self.post("Runtime.runIfWaitingForDebugger", child)
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Fetch.requestPaused":  # the page's own file goes on; anything else is refused
            url = params["request"]["url"]
            if url in self.urls:
                self.post("Fetch.continueRequest", session, requestId=params["requestId"])
            else:
                self.refused.append(url)
                self.post("Fetch.failRequest", session, requestId=params["requestId"], errorReason="BlockedByClient")
        elif method == "Runtime.exceptionThrown":
            self.errors.append(params["exceptionDetails"].get("exception", {}).get("description")
                               or params["exceptionDetails"].get("text"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))

    def open(self, url):
        """Opens `url` in the page, loaded anew even when only its fragment differs from the last one."""
        self.urls.add(url.split("#")[0])
        self.send("Page.navigate", self.session, url="about:blank")
        self.send("Page.navigate", self.session, url=url)

    def pump(self, seconds=0.05):
        """Handles the events that arrive within `seconds`."""
        self.ws.settimeout(seconds)
        try:
            while True:
                self.handle(json.loads(self.ws.recv()))
        except websocket.WebSocketTimeoutException:
            pass
        finally:
            self.ws.settimeout(60)

    def eval(self, expression):
        """The value of a JavaScript expression in the page (awaited when a promise), as JSON."""
        self.pump(0.01)
        result = self.send("Runtime.evaluate", self.session, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, timeout, what):
        deadline = time.time() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.time() > deadline:
                raise TimeoutError(f"{what}: not within {timeout} s")
            self.pump(0.2)

    def set_viewport(self, width, height):
        """The window's inner size, as a window of that size has it (the page sees a resize)."""
        self.send("Emulation.setDeviceMetricsOverride", self.session, width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def screenshot(self, path):
        """The whole page, not only the window, as a PNG."""
        size = self.send("Page.getLayoutMetrics", self.session)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.send("Page.captureScreenshot", self.session, format="png", captureBeyondViewport=True, clip=clip)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
