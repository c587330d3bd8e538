#!/usr/bin/env bash
# A one-node SLURM cluster on this host, without systemd, for the SLURM end-to-end test.
#
#   ci/slurm_single_node.sh install   # apt-get install slurmctld slurmd slurm-client munge (Debian 12: slurm 22.05)
#   ci/slurm_single_node.sh start     # write this checkout's config, clear what a dead earlier cluster of this
#                                     # checkout left, start munged (if not running), slurmctld and slurmd; wait
#                                     # until the node is idle
#   ci/slurm_single_node.sh stop      # cancel this cluster's jobs and stop this cluster's daemons
#   ci/slurm_single_node.sh env       # print SLURM_CONF=<this checkout's slurm.conf> and
#                                     # ARMLAB_SLURM_BIN=<client wrappers that use it>, one per line
#
# One cluster per checkout: several clones of the repository can run their SLURM tests on one host at once.
# Everything belongs to the checkout, named by a short hash of its resolved path (and of SLURM_CI_STATE when
# set): state, spool, pid files, logs and the config in /run/armlab-slurm-<hash> (or $SLURM_CI_STATE), ClusterName
# armlab-<hash>, SlurmctldPort and SlurmdPort picked free at start. Nothing host-wide is written: not
# /etc/slurm/slurm.conf (a real cluster's config there is left alone); daemons get `-f <config>`, clients
# SLURM_CONF. Jobs started by snakemake's jobstep executor call srun with SLURM_* removed from the environment, so
# $ARMLAB_SLURM_BIN holds srun, sbatch, squeue... wrappers that set SLURM_CONF: put it first on PATH. A start or
# stop kills only this cluster's step daemons and job processes (found by its spool dir and ClusterName) and
# cancels only its jobs. munged is shared by all clusters on the host: started if not running, never stopped.
#
# No accounting daemon: the Snakemake SLURM executor must poll with `--slurm-status-command squeue`,
# which it trusts only when MinJobAge is long. Here 3600 s: a finished job stays in squeue for as long as a test
# run may take (RUN_TIMEOUT_S, tests/conftest.py), so tests/workflows/test_slurm.py still sees every job of a run that another
# checkout's suite slowed past 600 s. No cgroups: proctrack/linuxproc and
# task/affinity. Node CPUs and memory come from `slurmd -C`. Requires root (not for `env`).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
ID=$(printf '%s' "$ROOT${SLURM_CI_STATE:+:$SLURM_CI_STATE}" | sha256sum | cut -c1-10)
STATE=${SLURM_CI_STATE:-/run/armlab-slurm-$ID}
CONF=$STATE/slurm.conf
BIN=$STATE/bin
CLUSTER=armlab-$ID
PORT_LOCK=/run/armlab-slurm-ports.lock   # held while a start picks its ports and until its daemons listen
export SLURM_CONF=$CONF
# a caller may have put this cluster's wrappers on PATH: the real clients are needed here
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$BIN" | paste -sd:)

install() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null && return 0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null; }
}

MARK="# written by ci/slurm_single_node.sh"

port_in_use() {   # any TCP socket (listening, connected or closing) on this local port, or another cluster's config
    local port=$1 hex conf
    hex=$(printf '%04X' "$port")
    awk -v p="$hex" 'FNR > 1 { n = split($2, a, ":"); if (a[n] == p) found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
    for conf in /run/armlab-slurm-*/slurm.conf; do
        [ "$conf" != "$CONF" ] && grep -qsxE "Slurm(ctld|d)Port=$port" "$conf" && return 0
    done
    return 1
}

pick_ports() {   # two free adjacent ports in 20000-29999 (clear of slurm's defaults and the ephemeral range)
    local port
    port=$(( 20000 + (16#${ID:0:4} % 2500) * 4 ))
    for _ in $(seq 1 2500); do
        if ! port_in_use "$port" && ! port_in_use $(( port + 1 )); then
            CTLD_PORT=$port D_PORT=$(( port + 1 ))
            return 0
        fi
        port=$(( port + 4 )); [ "$port" -lt 30000 ] || port=20000
    done
    echo "no two free ports in 20000-29999" >&2
    exit 5
}

write_config() {
    local node
    node=$(slurmd -C | head -n 1)          # "NodeName=<host> CPUs=… RealMemory=…"
    mkdir -p "$STATE/ctld" "$STATE/d" "$STATE/log"
    pick_ports
    cat > "$CONF.new" <<CONF
$MARK
ClusterName=$CLUSTER
SlurmctldHost=$(hostname -s)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$D_PORT
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=3600
ReturnToService=2
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=30
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    mv "$CONF.new" "$CONF"
    write_wrappers
}

write_wrappers() {   # clients bound to this cluster, for PATH (see the header: srun inside the jobs)
    local tool real
    mkdir -p "$BIN"
    for tool in srun sbatch salloc squeue sinfo scancel scontrol sacct sstat; do
        real=$(command -v "$tool") || continue
        printf '#!/bin/sh\nSLURM_CONF=%q exec %q "$@"\n' "$CONF" "$real" > "$BIN/$tool"
        chmod 0755 "$BIN/$tool"
    done
}

start_munge() {   # munged serves every cluster on this host: start it if none runs, and never stop it here
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
    [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null;
                                     chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key; }
    if ! munge -n >/dev/null 2>&1; then
        runuser -u munge -- /usr/sbin/munged 9>&- || munge -n >/dev/null 2>&1   # lost a race with another start
    fi
}

wait_idle() {
    for _ in $(seq 1 60); do
        if sinfo -h -o '%T' 2>/dev/null | grep -qx idle; then return 0; fi
        sleep 0.5
    done
    echo "slurm node did not become idle; see $STATE/log" >&2
    sinfo -N -l >&2 || true
    return 1
}

step_daemons() {   # this cluster's slurmstepd's: those holding a unix socket in its spool dir
    local inodes pid fd
    inodes=$(awk -v d="$STATE/d/" 'NR > 1 && index($8, d) == 1 { print "socket:[" $7 "]" }' /proc/net/unix)
    [ -n "$inodes" ] || return 0
    for pid in $(pgrep -x slurmstepd); do
        for fd in /proc/"$pid"/fd/*; do
            if grep -qxF "$(readlink "$fd" 2>/dev/null)" <<<"$inodes"; then echo "$pid"; break; fi
        done
    done
}

job_processes() {   # what this cluster's jobs run: slurmstepd gives each task SLURM_CLUSTER_NAME=<ClusterName>
    local environ pid
    for environ in /proc/[0-9]*/environ; do
        pid=${environ#/proc/}; pid=${pid%/environ}
        [ "$pid" != $$ ] || continue
        if grep -qszxF "SLURM_CLUSTER_NAME=$CLUSTER" "$environ"; then echo "$pid"; fi
    done
}

kill_leftovers() {   # step daemons and job processes of this cluster whose slurmd is gone; no other cluster's
    local pids
    mapfile -t pids < <(step_daemons; job_processes)
    [ "${#pids[@]}" = 0 ] || kill -9 "${pids[@]}" 2>/dev/null || true
}

clear_dead_cluster() {
    # A cluster of this checkout whose daemons died (a killed run never calls stop) leaves job state behind: slurmd
    # would report its job steps, the node would stay allocated. Its step daemons and job processes go too.
    stop_pidfile "$STATE/slurmd.pid"
    kill_leftovers
    rm -rf "$STATE/ctld" "$STATE/d"
    mkdir -p "$STATE/ctld" "$STATE/d"
}

start() {
    [ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
    if [ -s "$STATE/slurmctld.pid" ] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
        echo "a cluster started by this script from this checkout is running already; run '$0 stop' first" >&2
        exit 4
    fi
    install
    mkdir -p "$STATE"
    clear_dead_cluster
    start_munge
    exec 9>"$PORT_LOCK"   # two starts at once must not pick the same ports: one at a time until they listen
    flock -w 300 9 || { echo "timed out waiting for $PORT_LOCK" >&2; exit 5; }
    write_config
    # -c: clear jobs and node states saved by an earlier cluster (-i only ignores read errors); 9>&-: the daemons
    # must not hold the lock
    slurmctld -c -f "$CONF" 9>&-
    slurmd -f "$CONF" 9>&-
    wait_idle
    exec 9>&-
    echo "slurm is up ($CLUSTER, ports $CTLD_PORT/$D_PORT, $CONF): $(sinfo -h -o '%P %D %c cpus %m MB %T')"
}

stop_pidfile() {
    local pidfile=$1 pid
    [ -s "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    if [ -s "$CONF" ] && [ -s "$STATE/slurmctld.pid" ] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
        # SLURM_CONF is this checkout's config: this talks to this cluster's controller only
        scancel --user=root 2>/dev/null || true
        for _ in $(seq 1 20); do   # let slurmd end the cancelled steps itself
            squeue -h -t running,completing -o %i 2>/dev/null | grep -q . || break
            sleep 0.5
        done
    fi
    stop_pidfile "$STATE/slurmd.pid"
    stop_pidfile "$STATE/slurmctld.pid"
    kill_leftovers
    # munged stays: other checkouts' clusters on this host may use it
    rm -rf "$STATE"
}

case "${1:-}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    env) printf 'SLURM_CONF=%s\nARMLAB_SLURM_BIN=%s\n' "$CONF" "$BIN" ;;
    *) echo "usage: $0 install|start|stop|env" >&2; exit 2 ;;
esac
