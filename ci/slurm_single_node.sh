#!/usr/bin/env bash
# A one-node SLURM cluster on this host, without systemd, for the SLURM end-to-end test.
#
#   ci/slurm_single_node.sh install   # apt-get install slurmctld slurmd slurm-client munge (Debian 12: slurm 22.05)
#   ci/slurm_single_node.sh start     # write the config, clear what a dead earlier cluster left, start munged,
#                                     # slurmctld and slurmd; wait until the node is idle
#   ci/slurm_single_node.sh stop      # cancel all jobs and stop the daemons this script started
#
# No accounting daemon: the Snakemake SLURM executor must poll with `--slurm-status-command squeue`,
# which it trusts only when MinJobAge is long (here 600 s). No cgroups: proctrack/linuxproc and
# task/affinity. Node CPUs and memory come from `slurmd -C`. Requires root.
set -euo pipefail

STATE=${SLURM_CI_STATE:-/run/armlab-slurm}
CONF=/etc/slurm/slurm.conf

install() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null && return 0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null; }
}

MARK="# written by ci/slurm_single_node.sh"

write_config() {
    local node
    if [ -e "$CONF" ] && ! grep -qx "$MARK" "$CONF"; then
        echo "$CONF exists and was not written by this script: refusing to replace a real cluster's config" >&2
        exit 3
    fi
    node=$(slurmd -C | head -n 1)          # "NodeName=<host> CPUs=… RealMemory=…"
    mkdir -p /etc/slurm "$STATE/ctld" "$STATE/d" "$STATE/log"
    cat > "$CONF" <<CONF
$MARK
ClusterName=armlab-ci
SlurmctldHost=$(hostname -s)
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
MinJobAge=600
ReturnToService=2
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=30
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
}

start_munge() {
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
    [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null;
                                     chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key; }
    if ! munge -n >/dev/null 2>&1; then
        runuser -u munge -- /usr/sbin/munged
        touch "$STATE/munged.ours"   # stop only a munged this script started
    fi
}

wait_idle() {
    local i
    for i in $(seq 1 60); do
        if sinfo -h -o '%T' 2>/dev/null | grep -qx idle; then return 0; fi
        sleep 0.5
    done
    echo "slurm node did not become idle; see $STATE/log" >&2
    sinfo -N -l >&2 || true
    return 1
}

clear_dead_cluster() {
    # A cluster of this script whose daemons died (a killed run never calls stop) leaves job state behind: slurmd
    # would report its job steps, the node would stay allocated. Its step daemons go too: this host's slurm.conf
    # is ours (write_config checked), so every slurmstepd here belongs to it.
    pkill -9 -x slurmstepd 2>/dev/null || true
    stop_pidfile "$STATE/slurmd.pid"
    rm -rf "$STATE/ctld" "$STATE/d"
    mkdir -p "$STATE/ctld" "$STATE/d"
}

start() {
    [ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
    if [ -s "$STATE/slurmctld.pid" ] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
        echo "a cluster started by this script is running already; run '$0 stop' first" >&2
        exit 4
    fi
    install
    write_config
    clear_dead_cluster
    start_munge
    slurmctld -c   # -c: clear jobs and node states saved by an earlier cluster (-i only ignores read errors)
    slurmd
    wait_idle
    echo "slurm is up: $(sinfo -h -o '%P %D %c cpus %m MB %T')"
}

stop_pidfile() {
    local pidfile=$1 pid i
    [ -s "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    scancel --user=root 2>/dev/null || true
    stop_pidfile "$STATE/slurmd.pid"
    stop_pidfile "$STATE/slurmctld.pid"
    [ -e "$STATE/munged.ours" ] && stop_pidfile /run/munge/munged.pid
    rm -rf "$STATE"
    rm -f "$CONF"
}

case "${1:-}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
