#!/usr/bin/env python3
"""The run report in a real browser: `spotlight-trainer report` on a fixture run directory, then
the page loaded in headless Chromium (Debian's `chromium`), driven over the DevTools protocol on a
pipe (--remote-debugging-pipe: no port, no websocket library). Checks, from the live DOM:

  - every section of the report is there, with its heading, in order;
  - every embedded image decoded (complete, natural width > 0);
  - the page made no network request (Resource Timing is empty) and has no external links;
  - the browser logged no error or warning and no script exception (a deliberately broken page
    is loaded first to show that such errors are captured);

and saves a full-page screenshot as a test artifact (--artifacts DIR/report.png).

Exit status: 0 pass, 1 fail, 77 skip (only when no chromium is installed; scripts/bootstrap
installs it).
"""
import argparse, base64, json, os, select, shutil, subprocess, sys, tempfile, time

SECTIONS = ["overview", "scores", "time", "cost", "queue", "staleness", "grids", "exploration",
            "config"]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
TIMEOUT = 60  # seconds for any one browser step


class Failure(Exception):
    pass


class Browser:
    """Chromium with the DevTools protocol on fds 3 (commands) and 4 (replies, events)."""

    def __init__(self, binary, profile, log):
        cmd_r, self.cmd_w = os.pipe()
        self.res_r, res_w = os.pipe()

        def child():
            os.dup2(cmd_r, 3)
            os.dup2(res_w, 4)

        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, "--user-data-dir=" + profile, "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=child, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(res_w)
        self.buffer = b""
        self.last_id = 0
        self.events = []

    def _receive(self, deadline):
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.res_r], [], [], max(0.0, deadline - time.time()))
            if not ready:
                raise Failure("the browser did not answer within %d s" % TIMEOUT)
            chunk = os.read(self.res_r, 1 << 20)
            if not chunk:
                raise Failure("the browser closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None):
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.time() + TIMEOUT
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self.last_id:
                if "error" in reply:
                    raise Failure("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, session):
        deadline = time.time() + TIMEOUT
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._receive(deadline))

    def open(self, url):
        """A new tab at `url`, loaded; returns its session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable", session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        return session

    def evaluate(self, session, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                           session=session)
        if "exceptionDetails" in result:
            raise Failure("evaluating in the page failed: %s" % result["exceptionDetails"])
        return result["result"]["value"]

    def problems(self, session):
        """Console errors and warnings, script exceptions and failed loads of one tab."""
        out = []
        for e in self.events:
            if e.get("sessionId") != session:
                continue
            method, params = e.get("method"), e.get("params", {})
            if method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                out.append("log %s: %s" % (params["entry"]["level"], params["entry"]["text"]))
            elif method == "Runtime.exceptionThrown":
                out.append("exception: %s" % params["exceptionDetails"].get("text"))
            elif method == "Runtime.consoleAPICalled":
                out.append("console.%s" % params.get("type"))
        return out

    def close(self):
        try:
            self.call("Browser.close")
            self.proc.wait(timeout=TIMEOUT)
        except Exception:
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.cmd_w)
            os.close(self.res_r)


def check_report(browser, url, screenshot):
    session = browser.open(url)
    page = browser.evaluate(session, """JSON.stringify({
      sections: [...document.querySelectorAll('main > section')].map(s => ({
        id: s.id, heading: (s.querySelector('h2') || {}).textContent || ''})),
      images: [...document.images].map(i => ({ok: i.complete && i.naturalWidth > 0,
                                             src: i.src.slice(0, 22)})),
      charts: document.querySelectorAll('svg.chart').length,
      links: [...document.querySelectorAll('[src], [href]')]
               .map(e => e.getAttribute('src') || e.getAttribute('href'))
               .filter(u => !u.startsWith('data:') && !u.startsWith('#')),
      requests: performance.getEntriesByType('resource').map(r => r.name),
      height: document.documentElement.scrollHeight})""")
    page = json.loads(page)
    ids = [s["id"] for s in page["sections"]]
    if ids != SECTIONS:
        raise Failure("sections %s, expected %s" % (ids, SECTIONS))
    for s in page["sections"]:
        if not s["heading"].strip():
            raise Failure("section %s has no heading" % s["id"])
    if len(page["images"]) < 4:
        raise Failure("only %d images on the page" % len(page["images"]))
    broken = [i for i in page["images"] if not i["ok"] or i["src"] != "data:image/png;base64,"]
    if broken:
        raise Failure("%d images did not decode or are not embedded PNGs" % len(broken))
    if page["charts"] < 5:
        raise Failure("only %d charts" % page["charts"])
    if page["links"] or page["requests"]:
        raise Failure("external links %s / network requests %s" % (page["links"],
                                                                   page["requests"]))
    problems = browser.problems(session)
    if problems:
        raise Failure("the browser reported:\n  " + "\n  ".join(problems))
    # Full page screenshot, as an artifact for people.
    browser.call("Emulation.setDeviceMetricsOverride",
                 {"width": 1300, "height": min(int(page["height"]), 16000),
                  "deviceScaleFactor": 1, "mobile": False}, session=session)
    png = base64.b64decode(browser.call("Page.captureScreenshot", {"format": "png"},
                                        session=session)["data"])
    if not png.startswith(b"\x89PNG") or len(png) < 10000:
        raise Failure("screenshot is not a plausible PNG (%d bytes)" % len(png))
    with open(screenshot, "wb") as f:
        f.write(png)
    return page


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trainer", required=True, help="spotlight-trainer binary")
    ap.add_argument("--fixture", required=True, help="spotlight_test_write_report_fixture binary")
    ap.add_argument("--artifacts", required=True, help="folder for the screenshot and report")
    a = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: no chromium on PATH (scripts/bootstrap installs Debian's chromium)")
        return 77
    os.makedirs(a.artifacts, exist_ok=True)
    work = tempfile.mkdtemp(prefix="report-browser-test-")
    browser = None
    try:
        run = os.path.join(work, "run")
        subprocess.run([a.fixture, run], check=True, timeout=TIMEOUT)
        out = subprocess.run([a.trainer, "report", run], check=True, timeout=TIMEOUT,
                             capture_output=True, text=True)
        report = out.stdout.strip()
        if report != os.path.join(run, "report.html") or not os.path.isfile(report):
            raise Failure("spotlight-trainer report printed %r" % out.stdout)
        shutil.copy(report, os.path.join(a.artifacts, "report.html"))

        broken = os.path.join(work, "broken.html")
        with open(broken, "w") as f:
            f.write("<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\""
                    "img-src data:\"><img src=\"http://127.0.0.1:9/blocked.png\">")
        with open(os.path.join(a.artifacts, "chromium.log"), "w") as log:
            browser = Browser(chromium, os.path.join(work, "profile"), log)
            control = browser.open("file://" + broken)
            if not browser.problems(control):
                raise Failure("a page with a blocked image logged nothing: console capture broken")
            page = check_report(browser, "file://" + report,
                                os.path.join(a.artifacts, "report.png"))
        print("report %s (%d bytes): %d sections, %d images, %d charts, no console errors; "
              "screenshot %s" % (report, os.path.getsize(report), len(page["sections"]),
                                 len(page["images"]), page["charts"],
                                 os.path.join(a.artifacts, "report.png")))
        return 0
    except (Failure, subprocess.SubprocessError, OSError) as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        if browser:
            browser.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
