#!/usr/bin/python3
"""docs_page.py - the /docs page in headless Chromium, against the JSON API.

Usage: docs_page.py BASE_URL SCREENSHOT.png [KEY]

Loads BASE_URL/docs, waits for the served models to be listed (GET /v1/models), writes a state and
questions into the form, submits, and waits for the answers. Then it posts the same body to
/decide itself and requires: the response JSON shown on the page is the API's, byte for byte; there
is one bar per option (choice), level (score) or one (noul), in the API's order, each showing the
API's probability and drawn at that width; the page loaded nothing from another origin. Saves a
screenshot of the answered page. With KEY (a daemon with a bearer key and docs = true), the page
must first show the 401 of /v1/models, then list the models once the key is typed into it, and
its decision carries the key. Exits 77 when selenium or chromedriver is missing, 1 on a
mismatch.
"""
import json
import shutil
import sys
import urllib.request

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    print("SKIP: python3-selenium is not installed")
    sys.exit(77)

STATE = "Order #8812: the refund was promised twice and never arrived. Fix it today!"
QUESTIONS = {
    "department": {"type": "choice", "instructions": "Which team should handle this?",
                   "criteria": {"billing": "Payments, invoicing, refunds", "technical": "Bugs, outages",
                                "sales": None, "legal": "Contracts"}},
    "frustration": {"type": "score", "instructions": "How frustrated is the customer?",
                    "criteria": ["Calm", "Annoyed", "Frustrated", "Very angry"]},
    "is_urgent": {"type": "noul", "instructions": "The message conveys urgency."},
}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def browser():
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1100,1400", "--no-first-run", "--disable-extensions"):
        opts.add_argument(a)
    if shutil.which("chromium"):
        opts.binary_location = shutil.which("chromium")
    return webdriver.Chrome(service=Service(driver_path), options=opts)


def auth(key):
    return {"Authorization": "Bearer " + key} if key else {}


def api_answer(base, body, key):
    req = urllib.request.Request(base + "/decide", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **auth(key)})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def expected_bars(answers):
    """(question, key, probability) per bar, in the order the page must draw them."""
    out = []
    for qid, a in answers.items():
        if a["type"] == "noul":
            out.append((qid, "true", a["noul"]))
        else:
            out.extend((qid, k, p) for k, p in a["probabilities"].items())
    return out


def enter_key(d, key):
    """The page without the key shows the 401; typing it in lists the models."""
    WebDriverWait(d, 30).until(lambda d: "401" in d.find_element(By.ID, "models").text)
    d.find_element(By.ID, "key").send_keys(key)
    d.execute_script("document.getElementById('key').dispatchEvent(new Event('change'))")


def check_page(d, base, models, key):
    if key:
        enter_key(d, key)
    WebDriverWait(d, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"))
    listed = d.find_element(By.ID, "models").text
    for m in models["data"]:
        if m["id"] not in listed:
            fail("the page lists %r, not the served model %s" % (listed, m["id"]))
    d.execute_script("document.getElementById('state').value = arguments[0];"
                     "document.getElementById('questions').value = arguments[1];",
                     STATE, json.dumps(QUESTIONS, indent=2))
    d.find_element(By.ID, "submit").click()
    WebDriverWait(d, 60).until(lambda d: d.execute_script("return document.body.dataset.decided") == "1"
                               or d.find_element(By.ID, "error").text)
    err = d.find_element(By.ID, "error").text
    if err:
        fail("the page shows an error: " + err)
    shown_raw = d.execute_script("return document.getElementById('raw').textContent")
    body = {"state": STATE, "questions": QUESTIONS, "model": models["data"][0]["id"]}
    api = api_answer(base, body, key)
    if shown_raw != api:
        fail("the page's response differs from the API's:\npage: %s\napi:  %s" % (shown_raw, api))
    want = expected_bars(json.loads(api)["answers"])
    bars = d.execute_script("""
        return Array.from(document.querySelectorAll('.bar')).map(b => [b.dataset.question,
            b.dataset.key || 'true', b.querySelector('.value').textContent,
            b.querySelector('.fill').getBoundingClientRect().width / b.querySelector('.track').getBoundingClientRect().width]);""")
    if len(bars) != len(want):
        fail("%d bars drawn, %d probabilities answered" % (len(bars), len(want)))
    for (q, k, text, width), (wq, wk, p) in zip(bars, want):
        if (q, k) != (wq, wk) or float(text) != p:
            fail("bar %s/%s shows %s; the API says %s/%s = %r" % (q, k, text, wq, wk, p))
        if abs(width - p) > 0.01:
            fail("bar %s/%s is drawn at %.4f of its track for p = %r" % (q, k, width, p))
        print("ok   %-12s %-10s %-7s width %.4f" % (q, k, text, width))
    return len(bars)


def main():
    base, shot = sys.argv[1], sys.argv[2]
    key = sys.argv[3] if len(sys.argv) > 3 else ""
    if not (shutil.which("chromedriver") or shutil.which("chromium")):
        print("SKIP: chromium / chromium-driver are not installed")
        return 77
    with urllib.request.urlopen(urllib.request.Request(base + "/v1/models", headers=auth(key)), timeout=30) as r:
        models = json.loads(r.read())
    d = browser()
    try:
        d.get(base + "/docs")
        n = check_page(d, base, models, key)
        foreign = d.execute_script("""
            return performance.getEntriesByType('resource').map(e => e.name)
                .filter(u => new URL(u).origin !== location.origin);""")
        if foreign:
            fail("the page loaded from other origins: %s" % foreign)
        d.save_screenshot(shot)
        print("%d bars match the API; screenshot %s" % (n, shot))
    finally:
        d.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
