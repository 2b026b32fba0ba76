# bench/mpi/netlab_mpi.sh: sourced by the bench/mpi netlab scripts
# (netlab-anchors.sh; run.sh still has its own copy). A 2-host netlab
# whose hosts run mpirun's daemons through tests/pmix/netns_rsh_agent.sh (a TMPDIR per host: the hosts share
# /tmp and the host name, so without it Open MPI's session directories
# collide; docs/netlab.md, issue 24).
# The caller sets B (build dir), AGENT, SYS (Open MPI's own MCA dir) and P
# (the netlab prefix), then:
#   nlmpi_up RATES LOG        make the lab (tbf, cubic), set MGMT and MGMT_ADDR,
#                             remove it (and TMPDIR) on exit
#   nlmpi_run PER ERRLOG ARGS...  mpirun over both hosts, PER processes each,
#                             ARGS = MCA options, then the program and its args
#   nlmpi_bytes HOST IFACE    tx + rx bytes of IFACE in HOST
NL=$B/bench/netlab/netlab
export NETLAB_PREFIX=$P
export OMPI_MCA_mca_base_component_path=$B/mpi-binding/ompi:$SYS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NLMPI_TMP=$(mktemp -d)
export TMPDIR=$NLMPI_TMP

nlmpi_up() {
	trap '"$NL" down >/dev/null 2>&1; rm -rf "$NLMPI_TMP"' EXIT
	# cubic: with bbr (this VM's default) streams overran the rails' tbf
	# queues (thousands of drops, RTO stalls; docs/peers.md).
	"$NL" up --hosts 2 --rails "$1" --base auto --cc cubic >"$2" 2>&1 ||
		{ cat "$2"; return 1; }
	# The management subnet carries the daemons' out-of-band traffic:
	# "mgmt" in the hosts, "$P-mgmt" in the root namespace, so by address.
	MGMT_ADDR=$("$NL" addr h0 mgmt)
	MGMT=$(echo "$MGMT_ADDR" | sed -E 's/\.[0-9]+(\/[0-9]+)?$/.0\/24/')
}

nlmpi_run() {
	local per=$1 err=$2
	shift 2
	timeout -k 5 900 mpirun --oversubscribe --bind-to none \
		--mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include "$MGMT" \
		--host "$P-h0:$per,$P-h1:$per" -n $((2 * per)) --map-by node \
		"$@" 2>>"$err" </dev/null
}

nlmpi_bytes() {
	"$NL" exec "$1" cat /sys/class/net/$2/statistics/tx_bytes \
		/sys/class/net/$2/statistics/rx_bytes |
		awk '{s += $1} END {printf "%.0f\n", s}' # not 2.5e+09
}
