#!/usr/bin/env python3
"""ha_load.py - steady decisions through a balancer until told to stop; every answer recorded.

Usage: ha_load.py URL CLIENTS STOP_FILE OUT

CLIENTS threads each send POST URL/decide, one request per fresh connection (so that every
request is balanced on its own), until STOP_FILE exists. Each request appends a line to OUT:
"<monotonic seconds> <status or 0 for no answer> <X-Served-By or -> <error>". Exits 0; the caller
judges the lines.
"""
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

BODY = json.dumps({"state": "my payout failed twice, please help",
                   "questions": {"urgent": {"type": "noul", "instructions": "The message conveys urgency."}}})


def client(url, stop, out, lock):
    u = urllib.parse.urlsplit(url)
    while not os.path.exists(stop):
        status, err, server = 0, "", "-"
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
            c.request("POST", "/decide", BODY, {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            status, server = r.status, r.getheader("X-Served-By", "-")
            c.close()
        except Exception as e:  # a reset or refused connection is what the test counts
            err = repr(e).replace("\n", " ")
        with lock:
            out.write("%.4f %d %s %s\n" % (time.monotonic(), status, server, err))
            out.flush()


def main():
    url, n, stop, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    lock = threading.Lock()
    with open(path, "a") as out:
        ts = [threading.Thread(target=client, args=(url, stop, out, lock)) for _ in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
