#!/bin/bash
# Drives mrail-run through one behaviour; one meson test per case.
# usage: mrail_run_test.sh CASE MRAIL_RUN KVS_RANK
set -u
CASE=$1 RUN=$2 KVS=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-run-test.XXXXXX")
trap 'rm -rf "$T"' EXIT

fail() {
	echo "FAIL [$CASE]: $*" >&2
	for f in out err; do
		[ -s "$T/$f" ] && { echo "--- $f:" >&2; cat "$T/$f" >&2; }
	done
	exit 1
}

# run ARGS...: mrail-run with a safety net; sets RC and SECS.
run() {
	local t0=$SECONDS
	timeout -k 5 30 "$RUN" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	SECS=$((SECONDS - t0))
}

expect_rc() { [ "$RC" -eq "$1" ] || fail "exit status $RC, expected $1"; }
expect_err() { grep -Eq -- "$1" "$T/err" || fail "stderr lacks /$1/"; }
expect_out() { grep -Eq -- "$1" "$T/out" || fail "stdout lacks /$1/"; }
expect_fast() { [ "$SECS" -le "$1" ] || fail "took ${SECS}s, limit ${1}s"; }

# A process counts as gone once it is reaped or a zombie.
alive() {
	local st
	st=$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# expect_gone: every pid recorded in $T/*.pid has ended (waits up to 3 s).
expect_gone() {
	local f pid i
	for f in "$T"/*.pid; do
		[ -e "$f" ] || fail "no pid files"
		pid=$(cat "$f")
		for i in $(seq 30); do alive "$pid" || break; sleep 0.1; done
		alive "$pid" && fail "rank pid $pid ($f) still running"
	done
	return 0
}

wait_pidfiles() {
	local i
	for i in $(seq 100); do
		[ "$(ls "$T"/*.pid 2>/dev/null | wc -l)" -ge "$1" ] && return 0
		sleep 0.05
	done
	fail "ranks did not start"
}

# A rank that records its pid then sleeps (exec keeps the pid).
SLEEPER='echo $$ > "$D/$MRAIL_RANK.pid"; exec sleep 30'

# --wrap stand-in (see wrap.sh); it logs each rank's argv to $WRAP_LOG.
WRAP=$(cd "$(dirname "$0")" && pwd)/wrap.sh
export WRAP_LOG=$T/wrap.log
# expect_log PATTERN: the wrapper log has a line matching.
expect_log() { grep -Eq -- "$1" "$WRAP_LOG" || { cat "$WRAP_LOG" >&2; fail "wrap log lacks /$1/"; }; }

case $CASE in
allgather-[0-9]*)
	n=${CASE#allgather-}
	run -n "$n" "$KVS" allgather
	expect_rc 0
	[ "$(grep -c ': ok$' "$T/out")" -eq "$n" ] || fail "not all $n ranks ok"
	;;
env)
	run -n 3 -x FOO=bar -x EMPTY= bash -c \
		'echo "$MRAIL_RANK $MRAIL_SIZE $MRAIL_LOCAL_RANK $MRAIL_LOCAL_SIZE $FOO [$EMPTY] $MRAIL_KVS_ADDR $MRAIL_JOB_KEY"'
	expect_rc 0
	for r in 0 1 2; do
		expect_out "^$r 3 $r 3 bar \[\] 127\.0\.0\.1:[0-9]+ [0-9a-f]{32}$"
	done
	[ "$(awk '{print $7}' "$T/out" | sort -u | wc -l)" -eq 1 ] ||
		fail "ranks got different keys"
	key1=$(awk '{print $7; exit}' "$T/out")
	run -n 1 bash -c 'echo $MRAIL_JOB_KEY'
	[ "$(cat "$T/out")" != "$key1" ] || fail "job key reused across jobs"
	;;
exit-status)
	# A long grace: ending promptly proves SIGTERM reached the others.
	run -n 4 --grace 20 -x D="$T" bash -c \
		'[ "$MRAIL_RANK" = 2 ] && { sleep 0.3; exit 3; }; '"$SLEEPER"
	expect_rc 3
	expect_err 'mrail-run: rank 2 \(pid [0-9]+\) exited with status 3'
	expect_fast 8
	expect_gone
	;;
kill9)
	run -n 3 --grace 20 "$KVS" die-in-fence 1 9
	expect_rc 137
	expect_err 'mrail-run: rank 1 \(pid [0-9]+\) killed by signal 9 \(Killed\)'
	expect_fast 8
	;;
sigint)
	"$RUN" -n 3 --grace 20 -x D="$T" bash -c "$SLEEPER" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_pidfiles 3
	t0=$SECONDS
	kill -INT "$pid"
	wait "$pid"
	RC=$? SECS=$((SECONDS - t0))
	expect_rc 130
	expect_err 'got SIGINT'
	expect_fast 5
	expect_gone
	;;
sigterm-escalate)
	# Ranks that ignore the forwarded signal get SIGKILL after --grace.
	"$RUN" -n 2 --grace 1 -x D="$T" bash -c \
		'trap "" INT TERM HUP; echo $$ > "$D/$MRAIL_RANK.pid"; while :; do sleep 0.1; done' \
		>"$T/out" 2>"$T/err" &
	pid=$!
	wait_pidfiles 2
	t0=$SECONDS
	kill -TERM "$pid"
	wait "$pid"
	RC=$? SECS=$((SECONDS - t0))
	expect_rc 143
	expect_err 'still running after the 1 s grace period'
	expect_fast 5
	expect_gone
	;;
launcher-killed)
	# PR_SET_PDEATHSIG: the ranks die with a SIGKILLed mrail-run.
	"$RUN" -n 2 -x D="$T" bash -c "$SLEEPER" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_pidfiles 2
	kill -KILL "$pid"
	wait "$pid"
	expect_gone
	;;
timeout)
	run -n 2 --timeout 1 --grace 20 -x D="$T" bash -c "$SLEEPER"
	expect_rc 124
	expect_err 'exceeded --timeout 1 s'
	expect_fast 6
	expect_gone
	;;
keep-going)
	body='[ "$MRAIL_RANK" = 0 ] && exit 5; sleep 0.5; touch "$D/done.$MRAIL_RANK"'
	run -n 3 --keep-going -x D="$T" bash -c "$body"
	expect_rc 5
	expect_err 'rank 0 \(pid [0-9]+\) exited with status 5'
	[ -e "$T/done.1" ] && [ -e "$T/done.2" ] || fail "--keep-going killed ranks"
	rm -f "$T"/done.*
	run -n 3 -x D="$T" bash -c "$body"
	expect_rc 5
	[ -e "$T/done.1" ] || [ -e "$T/done.2" ] && fail "ranks not terminated"
	true
	;;
stray)
	run -n 3 --auth-timeout 1 "$KVS" stray
	expect_rc 0
	[ "$(grep -c ': ok$' "$T/out")" -eq 3 ] || fail "job did not complete"
	p='rejected connection from 127\.0\.0\.1:[0-9]+: '
	expect_err "$p"'bad job key'
	expect_err "$p"'bad magic'
	expect_err "$p"'message length out of bounds'
	expect_err "$p"'GET before authentication'
	expect_err "$p"'rank [0-9]+ out of range \(job size 3\)'
	expect_err "$p"'no authentication within 1 s'
	expect_err "$p"'rank 0 is already connected'
	;;
fence-timeout)
	run -n 2 -x MRAIL_BOOTSTRAP_TIMEOUT=1 "$KVS" fence-timeout
	expect_rc 0
	expect_err 'no answer from mrail-run .* within 1 s while waiting in a fence'
	;;
ipv6)
	grep -q '^0\{31\}1 ' /proc/net/if_inet6 2>/dev/null || exit 77
	run -n 3 --bind ::1 "$KVS" allgather
	expect_rc 0
	run -n 1 --bind ::1 bash -c 'echo $MRAIL_KVS_ADDR'
	expect_out '^\[::1\]:[0-9]+$'
	;;
client-env)
	# The client alone, with a broken environment: each variable is named.
	K=000102030405060708090a0b0c0d0e0f
	bad() { # STDERR-PATTERN VAR=VALUE...
		local pat=$1; shift
		env -i PATH="$PATH" MRAIL_LOCAL_RANK=0 MRAIL_LOCAL_SIZE=1 "$@" \
			timeout 20 "$KVS" allgather >"$T/out" 2>"$T/err"
		RC=$?
		[ "$RC" -ne 0 ] || fail "accepted: $*"
		expect_err "$pat"
	}
	ok="MRAIL_RANK=0 MRAIL_SIZE=1 MRAIL_JOB_KEY=$K"
	bad "MRAIL_KVS_ADDR='nonsense' is not HOST:PORT" $ok MRAIL_KVS_ADDR=nonsense
	bad "MRAIL_KVS_ADDR='127.0.0.1:99999'" $ok MRAIL_KVS_ADDR=127.0.0.1:99999
	bad "MRAIL_KVS_ADDR='::1:80'" $ok MRAIL_KVS_ADDR=::1:80
	bad "MRAIL_RANK='5' is not an integer in 0..1" MRAIL_RANK=5 MRAIL_SIZE=2 \
		MRAIL_JOB_KEY=$K MRAIL_KVS_ADDR=127.0.0.1:1
	bad "MRAIL_SIZE='abc'" MRAIL_RANK=0 MRAIL_SIZE=abc MRAIL_JOB_KEY=$K \
		MRAIL_KVS_ADDR=127.0.0.1:1
	bad "MRAIL_RANK is not set" MRAIL_SIZE=1 MRAIL_JOB_KEY=$K \
		MRAIL_KVS_ADDR=127.0.0.1:1
	bad "MRAIL_JOB_KEY is malformed" MRAIL_RANK=0 MRAIL_SIZE=1 \
		MRAIL_JOB_KEY=xyz MRAIL_KVS_ADDR=127.0.0.1:1
	grep -q xyz "$T/err" && fail "the job key was echoed"
	bad "MRAIL_BOOTSTRAP_TIMEOUT='soon'" $ok MRAIL_KVS_ADDR=127.0.0.1:1 \
		MRAIL_BOOTSTRAP_TIMEOUT=soon
	# Another job's service refuses us, and we say so.
	"$RUN" -n 1 -x D="$T" bash -c 'echo $MRAIL_KVS_ADDR > "$D/addr"; exec sleep 30' \
		>"$T/job.out" 2>"$T/job.err" &
	pid=$!
	for i in $(seq 100); do [ -s "$T/addr" ] && break; sleep 0.05; done
	bad "rejected this rank: bad job key" $ok MRAIL_KVS_ADDR="$(cat "$T/addr")"
	expect_err "init: -14"
	kill -TERM "$pid"
	wait "$pid"
	grep -Eq "rejected connection from 127\.0\.0\.1:[0-9]+: bad job key" \
		"$T/job.err" || fail "mrail-run did not log the rejection"
	# Nobody listening: a clear error after a short retry.
	bad "cannot connect to mrail-run at MRAIL_KVS_ADDR=127.0.0.1:1: Connection refused" \
		$ok MRAIL_KVS_ADDR=127.0.0.1:1
	;;
tag-output)
	run -n 2 --tag-output bash -c 'echo hello; echo oops >&2; printf "no newline"'
	expect_rc 0
	expect_out '^\[0\] hello$'
	expect_out '^\[1\] hello$'
	expect_out '^\[1\] no newline$'
	expect_err '^\[0\] oops$'
	;;
no-program)
	run -n 2 /nonexistent/prog
	expect_rc 127
	expect_err "/nonexistent/prog: No such file or directory"
	run -n 2 no-such-command-for-mrail-run
	expect_rc 127
	expect_err "no-such-command-for-mrail-run: command not found"
	printf 'data\n' >"$T/notexec"
	run -n 2 "$T/notexec"
	expect_rc 126
	expect_err "notexec: Permission denied"
	printf '\177ELF garbage' >"$T/badexec"
	chmod +x "$T/badexec"
	run -n 2 "$T/badexec"
	expect_rc 126
	expect_err "cannot execute '.*badexec' \(rank 0\): Exec format error"
	;;
bad-options)
	check() { # EXPECTED-STDERR ARGS...
		local pat=$1; shift
		run "$@"
		expect_rc 2
		expect_err "$pat"
	}
	check "unknown option '--bogus'" --bogus true
	check "unknown option '-q'" -q true
	check "invalid value '0' for -n/--np" -n 0 true
	check "invalid value 'abc' for -n/--np" -n abc true
	check "invalid value '1025' for -n/--np" --np 1025 true
	check "invalid value '-1' for --timeout" --timeout -1 true
	check "invalid value 'x' for --grace" --grace x true
	check "option '--timeout' requires a value" --timeout
	check "option '-n' requires a value" -n
	check "invalid value 'NOEQ' for -x" -x NOEQ true
	check "-x MRAIL_RANK: this variable is set by mrail-run" -x MRAIL_RANK=1 true
	check "missing the program to run" -n 2
	# TEST-NET-1: not an address of this host.
	check "cannot listen on '192\.0\.2\.1'.*|--bind 192\.0\.2\.1" \
		--bind 192.0.2.1 true
	run --help
	expect_rc 0
	expect_out '^Usage: mrail-run -n N'
	run --version
	expect_rc 0
	expect_out '^mrail-run \(libmrail\) [0-9]'
	# The program's own options are not mrail-run's.
	run -n 1 bash -c 'echo "$@"' x --bogus -n 3
	expect_rc 0
	expect_out '^--bogus -n 3$'
	;;
hosts-env)
	# Round robin over hosts; local rank/size per host; no --wrap: all here.
	run -n 5 --hosts a,b bash -c \
		'echo "$MRAIL_RANK $MRAIL_SIZE $MRAIL_LOCAL_RANK $MRAIL_LOCAL_SIZE"'
	expect_rc 0
	for l in "0 5 0 3" "1 5 0 2" "2 5 1 3" "3 5 1 2" "4 5 2 3"; do
		expect_out "^$l\$"
	done
	# A host named twice is one host.
	run -n 3 --hosts a,b,a bash -c 'echo "$MRAIL_RANK $MRAIL_LOCAL_RANK $MRAIL_LOCAL_SIZE"'
	expect_rc 0
	for l in "0 0 2" "1 0 1" "2 1 2"; do expect_out "^$l\$"; done
	# The bootstrap works with per-host local ranks.
	run -n 4 --hosts a,b,c -x KVS_RANK_HOSTS=1 "$KVS" allgather
	expect_rc 0
	[ "$(grep -c ': ok$' "$T/out")" -eq 4 ] || fail "not all 4 ranks ok"
	;;
hostfile)
	printf '# two slots on n0\nn0 slots=2\n\n  n1   max_slots=8 # one slot\n' >"$T/hosts"
	run -n 5 --hostfile "$T/hosts" --wrap "$WRAP exec {host} {rank}" bash -c \
		'echo "$MRAIL_RANK $WRAP_HOST $MRAIL_LOCAL_RANK $MRAIL_LOCAL_SIZE"'
	expect_rc 0
	for l in "0 n0 0 4" "1 n0 1 4" "2 n1 0 1" "3 n0 2 4" "4 n0 3 4"; do
		expect_out "^$l\$"
	done
	printf 'n0 slots=0\n' >"$T/bad"
	run -n 1 --hostfile "$T/bad" true
	expect_rc 2
	expect_err "$T/bad:1: invalid 'slots=0'"
	printf 'n0\nn1 cpus=4\n' >"$T/bad"
	run -n 1 --hostfile "$T/bad" true
	expect_rc 2
	expect_err "$T/bad:2: unknown attribute 'cpus=4'"
	printf '# nothing\n\n' >"$T/bad"
	run -n 1 --hostfile "$T/bad" true
	expect_rc 2
	expect_err "no hosts"
	run -n 1 --hostfile "$T/missing" true
	expect_rc 2
	expect_err "--hostfile $T/missing: No such file or directory"
	;;
wrap-exec)
	# Like ip netns exec: the wrapper execs the rank, environment kept.
	run -n 4 --hosts h0,h1 -x KVS_RANK_HOSTS=1 \
		--wrap "$WRAP exec {host} {rank}" "$KVS" allgather
	expect_rc 0
	[ "$(grep -c ': ok$' "$T/out")" -eq 4 ] || fail "not all 4 ranks ok"
	for r in 0 1 2 3; do expect_log "^wrap host=h$((r % 2)) rank=$r pid=[0-9]+ argc=2$"; done
	expect_log "^  arg: $KVS\$"
	expect_log '^  arg: allgather$'
	expect_err 'note: the key-value service is at 127\.0\.0\.1:[0-9]+, a loopback address'
	# Substitution inside words, literal braces, several tokens.
	: >"$WRAP_LOG"
	run -n 2 --hosts h0,h1 --wrap "$WRAP exec user@{host}.x r{rank}-{{h}}" \
		bash -c 'echo "[$WRAP_HOST] [$WRAP_RANK]"'
	expect_rc 0
	expect_out '^\[user@h0\.x\] \[r0-\{h\}\]$'
	expect_out '^\[user@h1\.x\] \[r1-\{h\}\]$'
	# Without --hosts, {host} is localhost.
	run -n 1 --wrap "$WRAP exec {host} {rank}" bash -c 'echo "[$WRAP_HOST]"'
	expect_rc 0
	expect_out '^\[localhost\]$'
	;;
wrap-env)
	# Like ssh: nothing of the environment arrives but what {env} passes.
	export MRAIL_LOG_LEVEL=warn NOT_MRAIL=x
	run -n 3 --hosts h0,h1 -x FOO='a b' --wrap "$WRAP clean {host} {rank} {env}" \
		bash -c 'echo "$MRAIL_RANK $MRAIL_SIZE $MRAIL_LOCAL_RANK $MRAIL_LOCAL_SIZE [$FOO] $MRAIL_LOG_LEVEL [${NOT_MRAIL-}] $MRAIL_KVS_ADDR $MRAIL_JOB_KEY"'
	expect_rc 0
	for l in "0 3 0 2" "1 3 0 1" "2 3 1 2"; do
		expect_out "^$l \[a b\] warn \[\] 127\.0\.0\.1:[0-9]+ [0-9a-f]{32}\$"
	done
	expect_log '^  arg: env$'
	expect_log '^  arg: MRAIL_LOG_LEVEL=warn$'
	expect_log '^  arg: FOO=a b$'
	expect_log '^  arg: MRAIL_JOB_KEY=[0-9a-f]{32}$'
	# ... and that is enough to bootstrap.
	run -n 3 --hosts h0,h1 -x KVS_RANK_HOSTS=1 \
		--wrap "$WRAP clean {host} {rank} {env}" "$KVS" allgather
	expect_rc 0
	[ "$(grep -c ': ok$' "$T/out")" -eq 3 ] || fail "not all 3 ranks ok"
	;;
wrap-quote)
	# A wrapper whose far side is a shell (ssh): --wrap-quote keeps words.
	arg="it's \$HOME; \`x\` \"q\" *"
	run -n 2 --hosts h0,h1 -x FOO='a  b;c' --wrap-quote \
		--wrap "$WRAP shell {host} {rank} {env}" \
		bash -c 'printf "%s|%s|%s\n" "$MRAIL_RANK" "$FOO" "$1"' x "$arg"
	expect_rc 0
	for r in 0 1; do
		grep -Fxq -- "$r|a  b;c|$arg" "$T/out" || fail "rank $r: words changed"
	done
	;;
wrap-exit)
	# A wrapper that forks: the rank's status comes back through it, and
	# ending the job reaches the rank behind it (process group).
	run -n 4 --grace 20 --hosts h0,h1 -x D="$T" \
		--wrap "$WRAP fork {host} {rank}" bash -c \
		'[ "$MRAIL_RANK" = 2 ] && { sleep 0.3; exit 3; }; '"$SLEEPER"
	expect_rc 3
	expect_err 'mrail-run: rank 2 \(pid [0-9]+, host h0\) exited with status 3'
	expect_fast 8
	expect_gone
	# exec: a signal death is the rank's own.
	run -n 3 --grace 20 --hosts h0,h1 --wrap "$WRAP exec {host} {rank}" \
		-x KVS_RANK_HOSTS=1 "$KVS" die-in-fence 1 9
	expect_rc 137
	expect_err 'rank 1 \(pid [0-9]+, host h1\) killed by signal 9'
	;;
wrap-signal)
	"$RUN" -n 3 --grace 20 --hosts h0,h1 -x D="$T" \
		--wrap "$WRAP fork {host} {rank}" bash -c "$SLEEPER" \
		>"$T/out" 2>"$T/err" &
	pid=$!
	wait_pidfiles 3
	t0=$SECONDS
	kill -TERM "$pid"
	wait "$pid"
	RC=$? SECS=$((SECONDS - t0))
	expect_rc 143
	expect_fast 5
	expect_gone
	# PR_SET_PDEATHSIG survives the wrapper's exec.
	rm -f "$T"/*.pid
	"$RUN" -n 2 --hosts h0,h1 -x D="$T" --wrap "$WRAP exec {host} {rank}" \
		bash -c "$SLEEPER" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_pidfiles 2
	kill -KILL "$pid"
	wait "$pid"
	expect_gone
	;;
wrap-errors)
	check() { # EXPECTED-STDERR ARGS...
		local pat=$1; shift
		run "$@"
		expect_rc 2
		expect_err "$pat"
	}
	check "--wrap: unknown token in '\{hots\}'" --wrap 'ssh {hots}' true
	check "--wrap: \{env\} must be a word of its own" --wrap 'ssh x{env}' true
	check "--wrap: lone '\}'" --wrap 'ssh a}' true
	check "--wrap: empty command template" --wrap '  ' true
	check "--wrap: the template must start with a command" --wrap '{env} x' true
	check "--wrap-quote needs --wrap" --wrap-quote true
	check "--hosts and --hostfile exclude each other" --hosts a --hostfile /dev/null true
	check "--hosts: host 'a b' contains ' '" --hosts 'a b' true
	check "--hosts: host '-oProxyCommand=x' starts with '-'" --hosts 'a,-oProxyCommand=x' true
	check "--hosts: a host name must have 1..255 characters" --hosts 'a,,b' true
	check "--hosts: a host name must have 1..255 characters" --hosts 'a,' true
	check "option '--wrap' requires a value" --wrap
	run -n 2 --wrap 'no-such-wrapper-for-mrail-run {host}' true
	expect_rc 127
	expect_err "--wrap command 'no-such-wrapper-for-mrail-run' \(rank 0\): command not found"
	# With --wrap, PROGRAM need not exist here (it runs elsewhere).
	run -n 1 --wrap "$WRAP exec {host} {rank}" /no/such/program
	expect_rc 127
	;;
pmix-env)
	# Inside an mpirun/srun job: ranks must not inherit its PMIx identity.
	PMIX_RANK=3 PMIX_NAMESPACE=outer PMIX_ID=outer.3 \
		PMIX_SERVER_URI41='x;tcp4://127.0.0.1:1' PMIX_SERVER_URI2=y \
		PMIX_MCA_gds=hash run -n 1 -x PMIX_ID=mine bash -c 'env | grep ^PMIX_ | sort'
	expect_rc 0
	[ "$(cat "$T/out")" = "$(printf 'PMIX_ID=mine\nPMIX_MCA_gds=hash')" ] ||
		fail "PMIx identity not removed"
	;;
*)
	fail "unknown case"
	;;
esac
exit 0
