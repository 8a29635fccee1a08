#!/usr/bin/env bash
# An emulated internet in network namespaces, for tests and benchmarks.
#
#   scripts/wan.sh up NAME [LINK…]   build it; prints the namespaces and addresses
#   scripts/wan.sh down NAME    remove it (also removes what a crashed run left)
#   scripts/wan.sh exec NAME NODE CMD...   run CMD inside NODE (pub, home1 … home4)
#
# Layout, every address a documentation or private range inside namespaces made here:
#   NAME-pub    the "internet": 203.0.113.254/24 towards the home routers, and
#               198.51.100.10/24 for public services (signaling, seeder, coturn).
#   NAME-rN     home N's router: WAN 203.0.113.N, LAN 192.168.N.1, NAT by nftables:
#               routers 1 and 2 masquerade keeping source ports (endpoint-independent
#               mapping, as most home routers); routers 3 and 4 with random ports per
#               connection (symmetric, as carrier-grade NATs).
#   NAME-homeN  one host behind router N: 192.168.N.2, default route via the router.
#
# LINK options shape every home's path through its router (this kernel has no netem):
#   --delay MS     one-way delay added in each direction (so the round trip gains 2 × MS)
#   --jitter MS    extra delay, uniform in [0, MS), packets kept in order
#   --loss PCT     packets lost in each direction, in percent
#   --rate MBIT    the home's uplink rate (tbf on the router's WAN side)
#   --seed N       seed of the losses and jitters (router N adds its number)
# and names:
#   --host NAME=IP every node resolves NAME to IP (repeatable): /etc/netns/<node>/hosts,
#                  which `ip netns exec` puts in place of /etc/hosts
# Delay, jitter and loss come from ppspp-linkem (crates/ppspp-linkem) on a netfilter queue
# in each router: $PPSPP_LINKEM, else target/debug/ppspp-linkem. It runs at real-time
# priority where chrt is permitted (WAN_LINK_NORMAL_PRIORITY=1: at normal priority, as where
# it is not); its log, /run/ppspp-wan/NAME-rN.log, says which, and how many packets it
# released late.
# Names stay short: interface names hold at most 15 bytes.
set -euo pipefail

cmd=${1:?usage: wan.sh up|down|exec NAME ...}
name=${2:?usage: wan.sh up|down|exec NAME ...}
HOMES=4
top=$(cd "$(dirname "$0")/.." && pwd)
run_dir=/run/ppspp-wan
delay=0 jitter=0 loss=0 rate="" seed=1 hosts=()
if [ "$cmd" = up ]; then
    shift 2
    while [ $# -gt 0 ]; do
        case "$1" in
            --delay) delay=$2 ;;
            --jitter) jitter=$2 ;;
            --loss) loss=$2 ;;
            --rate) rate=$2 ;;
            --seed) seed=$2 ;;
            --host) hosts+=("$2") ;;
            *) echo "wan: unknown option $1" >&2; exit 2 ;;
        esac
        shift 2
    done
fi

ns() { ip netns exec "$name-$1" "${@:2}"; }

# A namespace for this internet, IPv4 only: with IPv6, link-local addresses would appear
# (after duplicate detection) a second or two after `up` returned, so what runs inside
# could see its network change under it.
add_ns() {
    ip netns add "$1" || return 1
    ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
}

# Every node's name: pub, r1 … rN, home1 … homeN.
nodes() {
    echo pub
    seq -f 'r%g' "$HOMES"
    seq -f 'home%g' "$HOMES"
}

down() {
    for pid in "$run_dir/$name"-r*.pid; do
        [ -e "$pid" ] || continue
        local p
        p=$(cat "$pid")
        kill "$p" 2>/dev/null || true
        for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        rm -f "$pid" "${pid%.pid}.log"
    done
    # Whatever still runs inside (a server a failed test left) goes with its namespace.
    local n
    for n in $(nodes); do
        ip netns pids "$name-$n" 2>/dev/null | xargs -r kill 2>/dev/null || true
    done
    for n in $(nodes); do
        ip netns del "$name-$n" 2>/dev/null || true
        rm -rf "/etc/netns/$name-$n"
    done
}

# Each --host NAME=IP into every node's hosts file.
names() {
    [ ${#hosts[@]} -gt 0 ] || return 0
    local n h
    for n in $(nodes); do
        mkdir -p "/etc/netns/$name-$n"
        printf '127.0.0.1 localhost\n' > "/etc/netns/$name-$n/hosts"
        for h in "${hosts[@]}"; do
            printf '%s %s\n' "${h#*=}" "${h%%=*}" >> "/etc/netns/$name-$n/hosts"
        done
    done
}

# Starts the link emulator in router $1 and sends its forwarded packets through it.
shape() {
    local r="$name-r$1"
    local linkem=${PPSPP_LINKEM:-$top/target/debug/ppspp-linkem}
    [ -x "$linkem" ] || { echo "wan: $linkem not found (cargo build -p ppspp-linkem)" >&2; exit 1; }
    mkdir -p "$run_dir"
    local log="$run_dir/$r.log"
    # Real-time priority where permitted: the link keeps its delay while browsers load the CPU.
    local prio=() level=normal
    if [ -z "${WAN_LINK_NORMAL_PRIORITY:-}" ] && chrt -f 10 true 2>/dev/null; then prio=(chrt -f 10) level=real-time; fi
    # The log's first line says which priority it got (the tests' failure reports show it).
    echo "link emulator at $level priority" > "$log"
    ip netns exec "$r" "${prio[@]}" "$linkem" --queue 0 --delay-ms "$delay" --jitter-ms "$jitter" \
        --loss-percent "$loss" --seed "$((seed + $1))" >> "$log" 2>&1 &
    echo $! > "$run_dir/$r.pid"
    for _ in $(seq 100); do
        grep -q ready "$log" && break
        kill -0 "$(cat "$run_dir/$r.pid")" 2>/dev/null || { cat "$log" >&2; exit 1; }
        sleep 0.05
    done
    grep -q ready "$log" || { echo "wan: the link emulator of $r did not start" >&2; exit 1; }
    # Queued on arrival, before conntrack sees them: a packet held after conntrack leaves its
    # flow's entry unconfirmed, so the next packet of that flow gets an entry of its own, and
    # the symmetric router a port of its own (a burst to one server left from four ports,
    # which no NAT does). --queue-bypass: should the emulator die, packets pass instead of
    # vanishing.
    local dev
    for dev in lan wan; do
        ip netns exec "$r" iptables -t raw -A PREROUTING -i "$dev" -j NFQUEUE --queue-num 0 --queue-bypass
    done
}

up() {
    if ! add_ns "$name-pub" 2>/dev/null; then
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
    # Beyond the documentation ranges lies nothing, as far as this internet knows: packets
    # for other addresses (a home's private one, learnt from its host candidate) vanish
    # there, as on the real internet, instead of failing at once with "network is
    # unreachable" (coturn ends a TURN allocation whose relay socket gets that error).
    # (No dummy devices in this kernel: a veth whose frames go to a MAC nobody has.)
    ns pub ip link add void type veth peer name voidsink
    ns pub ip link set void up
    ns pub ip link set voidsink up
    ns pub ip neigh add 192.0.2.1 lladdr 02:00:00:00:00:01 dev void nud permanent
    ns pub ip route add default via 192.0.2.1 dev void onlink
    for i in $(seq "$HOMES"); do
        r="$name-r$i"
        h="$name-home$i"
        add_ns "$r"
        add_ns "$h"
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
        [ "$i" -ge 3 ] && how="masquerade random"
        ip netns exec "$r" nft -f - <<NFT
table ip nat {
    chain postrouting {
        type nat hook postrouting priority srcnat; policy accept;
        oifname "wan" $how
    }
}
table ip filter {
    # Unsolicited packets from outside are dropped before conntrack confirms them: a
    # confirmed entry for one would take the port a home host's next outgoing packet to
    # that sender needs, and the router would pick another port (not what a home router
    # keeping ports does, and what breaks hole punching when one side's check comes first).
    chain input {
        type filter hook input priority filter; policy accept;
        iifname "wan" ct state new drop
    }
    chain forward {
        type filter hook forward priority filter; policy drop;
        iifname "lan" oifname "wan" accept
        iifname "wan" oifname "lan" ct state established,related accept
    }
}
NFT
        if [ "$delay$jitter$loss" != 000 ]; then
            shape "$i"
        fi
        if [ -n "$rate" ]; then
            ip netns exec "$r" tc qdisc add dev wan root tbf rate "${rate}mbit" burst 32kb latency 200ms
        fi
    done
    names
    echo "wan: $name up: services at 198.51.100.10 in $name-pub; homes $name-home1..$HOMES behind 203.0.113.1..$HOMES (3 and 4 are symmetric)"
}

case "$cmd" in
    # A failure half-way leaves nothing behind.
    up) down; trap 'rc=$?; [ "$rc" = 0 ] || down; exit "$rc"' EXIT; up ;;
    down) down ;;
    exec)
        node=${3:?usage: wan.sh exec NAME NODE CMD...}
        exec ip netns exec "$name-$node" "${@:4}"
        ;;
    *) echo "usage: wan.sh up|down|exec NAME ..." >&2; exit 2 ;;
esac
