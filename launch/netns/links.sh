# Sourced by launch/netns_hosts.sh: links.json (what the launcher made and measured, read
# by tpbench through TPB_LINKS_FILE) and the measurements that fill it. Uses the main
# script's constants (STATE, PY, NET, RATE_PORT) and helpers (hosts, addr_of, in_host).
# shellcheck shell=bash disable=SC2016
# ---------------------------------------------------------------------------------------------
# links.json: one small python3 helper, so the file is always valid JSON (no jq here).
LINKS_PY='
import json, os, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
path, op, args = sys.argv[1], sys.argv[2], sys.argv[3:]
def load():
    with open(path) as f:
        return json.load(f)
def save(d):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(d, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
def host(d, name):
    return next(h for h in d["hosts"] if h["name"] == name)
if op == "init":
    subnet, prefix, names = args[0], args[1], args[2:]
    save({"launcher": "launch/netns_hosts.sh", "subnet": subnet, "hosts": [
        {"name": n, "addr": "%s.%d" % (prefix, int(n[1:]) + 1), "link": "up", "rate": None,
         "delay_us": None, "measured": {"rtt_us_p50": None, "rtt_method": None,
                                        "rate_mbit": None, "rate_method": None}}
        for n in names]})
elif op == "set":                      # set HOST key=JSON ... (measured.x for the nested ones)
    d = load(); h = host(d, args[0])
    for kv in args[1:]:
        k, v = kv.split("=", 1)
        tgt = h
        if k.startswith("measured."):
            tgt, k = h["measured"], k[len("measured."):]
        tgt[k] = json.loads(v)
    save(d)
elif op == "get":                      # get HOST key: the value, empty for null
    v = host(load(), args[0])
    for part in args[1].split("."):
        v = v[part]
    print("" if v is None else v)
elif op == "status":
    d = load()
    print("hosts on %s (bridge %s), links file %s" % (d["subnet"], args[0], path))
    for h in d["hosts"]:
        m = h["measured"]
        rtt = "-" if m["rtt_us_p50"] is None else "%.1f us" % m["rtt_us_p50"]
        rm = "-" if m["rate_mbit"] is None else "%.0f Mbit/s" % m["rate_mbit"]
        print("  %-4s %-12s link %-4s rate %-8s delay %-8s rtt_p50 %-10s measured rate %s" % (
            h["name"], h["addr"], h["link"], h["rate"] or "-",
            "-" if h["delay_us"] is None else "%gus" % h["delay_us"], rtt, rm))
        if m["rtt_method"]:
            print("       rtt: %s" % m["rtt_method"])
        if m["rate_method"]:
            print("       rate: %s" % m["rate_method"])
'
links() { "$PY" -c "$LINKS_PY" "$STATE/links.json" "$@"; }

# ---------------------------------------------------------------------------------------------
# Measuring. RTT: median of 20 pings 10 ms apart from a peer that has its link up. Rate: the
# fastest of three python3 TCP streams from the peer into the host, 1 s each (what tbf on the
# bridge side lets in). One stream alone read a 1gbit link at 501 Mbit/s once, on a host whose
# CPU was slowed by a neighbour (tbf releases frames on timers); a link's rate is what it can
# carry, so the best of a few is the figure, as for the other peaks.
peer_of() { # HOST: another host with its link up, h0 first
  local h
  for h in $(hosts); do
    [ "$h" = "$1" ] && continue
    [ "$(links get "$h" link)" = up ] && { echo "$h"; return 0; }
  done
  return 0
}
ping_median_us() { # FROM ADDR -> median RTT in us, empty if no reply
  ip netns exec "$1" ping -n -c 20 -i 0.01 -W 1 "$2" 2>/dev/null | "$PY" -c '
import re, statistics, sys
t = [float(m.group(1)) * 1000 for m in re.finditer(r"time=([0-9.]+) ms", sys.stdin.read())]
print("%.1f" % statistics.median(t) if t else "")' || true
}
RECV_PY='
import json, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); s.settimeout(5)
c, _ = s.accept(); c.settimeout(5)
buf = bytearray(1 << 20); n = 0; t0 = None
while True:
    k = c.recv_into(buf)
    if not k:
        break
    if t0 is None:
        t0 = time.monotonic()
    n += k
t1 = time.monotonic()
c.close()
print(json.dumps({"bytes": n, "seconds": (t1 - t0) if t0 else 0.0}))
'
SEND_PY='
import socket, sys, time
end = time.monotonic() + 3
while True:
    try:
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2); break
    except OSError:
        if time.monotonic() > end:
            raise
        time.sleep(0.02)
data = b"\0" * (1 << 18); end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    c.sendall(data)
c.shutdown(socket.SHUT_WR); c.settimeout(10); c.recv(1); c.close()
'
rate_mbit() { # FROM TO SECONDS -> Mbit/s delivered, empty on failure
  local out=$STATE/rate.$$ rpid r=""
  ip netns exec "$2" timeout 10 "$PY" -c "$RECV_PY" "$(addr_of "$2")" "$RATE_PORT" >"$out" 2>/dev/null &
  rpid=$!
  ip netns exec "$1" timeout 10 "$PY" -c "$SEND_PY" "$(addr_of "$2")" "$RATE_PORT" "$3" 2>/dev/null || true
  wait "$rpid" 2>/dev/null || true
  [ -s "$out" ] && r=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
print("%.1f" % (d["bytes"] * 8 / d["seconds"] / 1e6) if d["seconds"] > 0 else "")' "$out" 2>/dev/null || true)
  rm -f "$out"
  echo "$r"
}
best_rate_mbit() { # FROM TO -> the fastest of three 1 s streams, empty if all failed
  local i r best=""
  for i in 1 2 3; do
    r=$(rate_mbit "$1" "$2" 1.0)
    [ -n "$r" ] && { [ -z "$best" ] || "$PY" -c 'import sys; sys.exit(not float(sys.argv[1]) > float(sys.argv[2]))' "$r" "$best"; } && best=$r
  done
  echo "$best"
}
measure_host() { # HOST [rate|keep]: measure and record (rate: also the rate; keep: leave the
  local h=$1 want_rate=${2:-} p rtt r  # recorded rate as it is; default: the rate if one is set)
  if [ "$(links get "$h" link)" != up ]; then
    links set "$h" measured.rtt_us_p50=null 'measured.rtt_method="not measured: link down"' \
      measured.rate_mbit=null measured.rate_method=null
    return
  fi
  p=$(peer_of "$h")
  if [ -z "$p" ]; then
    links set "$h" measured.rtt_us_p50=null 'measured.rtt_method="not measured: no peer host with its link up"'
    [ "$want_rate" = keep ] || links set "$h" measured.rate_mbit=null measured.rate_method=null
    return
  fi
  rtt=$(ping_median_us "$p" "$(addr_of "$h")")
  links set "$h" "measured.rtt_us_p50=${rtt:-null}" \
    "measured.rtt_method=\"median of ping -n -c 20 -i 0.01 from $p to $(addr_of "$h") (84-byte ICMP echo)\""
  [ "$want_rate" = keep ] && return
  if [ "$want_rate" = rate ] || [ -n "$(links get "$h" rate)" ]; then
    r=$(best_rate_mbit "$p" "$h")
    links set "$h" "measured.rate_mbit=${r:-null}" \
      "measured.rate_method=\"python3 TCP stream $p -> $h for 1.0 s, the fastest of 3: bytes delivered / time from first byte to EOF\""
  else
    links set "$h" measured.rate_mbit=null measured.rate_method=null
  fi
}

remeasure() { # HOST: after HOST's link changed: its RTT and rate, the others' RTT (HOST may be
  local o                    # on their ping path); their recorded rates stay as measured
  measure_host "$1"
  for o in $(hosts); do [ "$o" = "$1" ] || measure_host "$o" keep; done
}

