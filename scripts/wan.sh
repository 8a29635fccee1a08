#!/usr/bin/env bash
# An emulated internet in network namespaces, for tests and benchmarks (issue 13).
#
#   scripts/wan.sh up NAME      build it; prints the namespaces and addresses
#   scripts/wan.sh down NAME    remove it (also removes what a crashed run left)
#   scripts/wan.sh exec NAME NODE CMD...   run CMD inside NODE (pub, home1, home2, home3)
#
# Layout, every address a documentation or private range inside namespaces made here:
#   NAME-pub    the "internet": 203.0.113.254/24 towards the home routers, and
#               198.51.100.10/24 for public services (signaling, seeder, coturn).
#   NAME-rN     home N's router: WAN 203.0.113.N, LAN 192.168.N.1, NAT by nftables:
#               routers 1 and 2 masquerade keeping source ports (endpoint-independent
#               mapping, as most home routers); router 3 with random ports per
#               connection (symmetric, as carrier-grade NATs).
#   NAME-homeN  one host behind router N: 192.168.N.2, default route via the router.
# Names stay short: interface names hold at most 15 bytes.
set -euo pipefail

cmd=${1:?usage: wan.sh up|down|exec NAME ...}
name=${2:?usage: wan.sh up|down|exec NAME ...}
HOMES=3

ns() { ip netns exec "$name-$1" "${@:2}"; }

down() {
    for n in pub r1 r2 r3 home1 home2 home3; do
        ip netns del "$name-$n" 2>/dev/null || true
    done
}

up() {
    if ! ip netns add "$name-pub" 2>/dev/null; then
        echo "wan: cannot create network namespaces here (needs root and CAP_SYS_ADMIN)" >&2
        exit 3
    fi
    command -v nft >/dev/null || { echo "wan: nft not found (scripts/setup.sh installs nftables)" >&2; exit 3; }
    ns pub ip link set lo up
    ns pub ip link add br0 type bridge
    ns pub ip link set br0 up
    ns pub ip addr add 203.0.113.254/24 dev br0
    ns pub ip addr add 198.51.100.10/24 dev br0
    ns pub sysctl -qw net.ipv4.ip_forward=1
    for i in $(seq "$HOMES"); do
        r="$name-r$i"
        h="$name-home$i"
        ip netns add "$r"
        ip netns add "$h"
        ip netns exec "$r" ip link set lo up
        ip netns exec "$h" ip link set lo up
        # WAN: router ↔ the internet's bridge.
        ip link add "wan$i" netns "$r" type veth peer name "up$i" netns "$name-pub"
        ns pub ip link set "up$i" master br0 up
        ip netns exec "$r" ip link set "wan$i" name wan
        ip netns exec "$r" ip addr add "203.0.113.$i/24" dev wan
        ip netns exec "$r" ip link set wan up
        ip netns exec "$r" ip route add default via 203.0.113.254
        # LAN: router ↔ its one host.
        ip link add "lan$i" netns "$r" type veth peer name "eth$i" netns "$h"
        ip netns exec "$r" ip link set "lan$i" name lan
        ip netns exec "$r" ip addr add "192.168.$i.1/24" dev lan
        ip netns exec "$r" ip link set lan up
        ip netns exec "$h" ip link set "eth$i" name eth0
        ip netns exec "$h" ip addr add "192.168.$i.2/24" dev eth0
        ip netns exec "$h" ip link set eth0 up
        ip netns exec "$h" ip route add default via "192.168.$i.1"
        ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1
        local how="masquerade"
        [ "$i" = 3 ] && how="masquerade random"
        ip netns exec "$r" nft -f - <<NFT
table ip nat {
    chain postrouting {
        type nat hook postrouting priority srcnat; policy accept;
        oifname "wan" $how
    }
}
table ip filter {
    chain forward {
        type filter hook forward priority filter; policy drop;
        iifname "lan" oifname "wan" accept
        iifname "wan" oifname "lan" ct state established,related accept
    }
}
NFT
    done
    echo "wan: $name up: services at 198.51.100.10 in $name-pub; homes $name-home1..$HOMES behind 203.0.113.1..$HOMES (3 is symmetric)"
}

case "$cmd" in
    up) down; up ;;
    down) down ;;
    exec)
        node=${3:?usage: wan.sh exec NAME NODE CMD...}
        exec ip netns exec "$name-$node" "${@:4}"
        ;;
    *) echo "usage: wan.sh up|down|exec NAME ..." >&2; exit 2 ;;
esac
