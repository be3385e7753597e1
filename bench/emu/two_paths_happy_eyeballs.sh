#!/bin/bash
# Evidence for docs/emulator.md, "Multi-homed hosts": can a real program race
# two paths between two network namespaces? Two veth pairs join a client and
# a server namespace: path 0 (the preferred, "Wi-Fi") carries IPv6 only, path
# 1 ("LTE") IPv4 only, so curl's Happy Eyeballs (RFC 8305: IPv6 first, IPv4
# after --happy-eyeballs-timeout-ms) is a race of the two paths. Then path 0
# goes dead (the server drops what arrives on it, nft) and curl fetches again.
# No delay is emulated (plain veth). Needs root, curl, nft, python3; removes
# its namespaces on exit. Usage: sudo bash bench/emu/two_paths_happy_eyeballs.sh
set -eu
C=l4slab-he-c-$$
S=l4slab-he-s-$$
SRV=
cleanup() {
    [ -n "$SRV" ] && kill "$SRV" 2>/dev/null
    ip netns del "$C" 2>/dev/null || true
    ip netns del "$S" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$C"
ip netns add "$S"
ip link add wifi netns "$C" type veth peer name wifi netns "$S"
ip link add lte netns "$C" type veth peer name lte netns "$S"
for ns in "$C" "$S"; do
    for dev in lo wifi lte; do ip -n "$ns" link set "$dev" up; done
done
ip -n "$C" -6 addr add fd31::1/64 dev wifi nodad
ip -n "$S" -6 addr add fd31::2/64 dev wifi nodad
ip -n "$C" addr add 10.231.1.1/24 dev lte
ip -n "$S" addr add 10.231.1.2/24 dev lte
ip netns exec "$S" python3 -m http.server --bind :: 8080 >/dev/null 2>&1 &
SRV=$!
for _ in $(seq 50); do
    ip netns exec "$C" curl -s -o /dev/null http://10.231.1.2:8080/ && break
    sleep 0.1
done
get() {
    ip netns exec "$C" curl -s -o /dev/null --happy-eyeballs-timeout-ms "$1" \
        --resolve srv:8080:fd31::2,10.231.1.2 \
        -w "connected %{time_connect} s via %{remote_ip}" http://srv:8080/
}
echo "both paths up, racing 250 ms: $(get 250)"
ip netns exec "$S" nft add table inet he
ip netns exec "$S" nft add chain inet he in '{ type filter hook input priority 0; }'
ip netns exec "$S" nft add rule inet he in iifname wifi drop
echo "path 0 dead,   racing 250 ms: $(get 250)"
echo "path 0 dead,   racing 100 ms: $(get 100)"
