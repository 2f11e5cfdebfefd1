# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The real daemon under the restrictions systemd/gpuprobed.service states, and tracing still exact.

systemd need not be PID 1 here: the test reads the unit's [Service] section and rebuilds, for the
daemon process, what systemd would do for each directive, then runs
`gpuprobed --daemon --foreground --config FILE` (the unit's ExecStart, with the test's
configuration) inside it:

  unshare --mount --propagation slave [--uts]      PrivateMounts=, a namespace for the mounts;
                                                    ProtectHostname= (its own UTS namespace)
    python3 THIS_FILE stage1 SPEC                  ProtectSystem=, ProtectHome=, PrivateTmp=,
                                                    PrivateDevices=, ProtectKernelTunables=,
                                                    ProtectKernelModules=, ProtectKernelLogs=,
                                                    ProtectControlGroups=, the state directory
                                                    the only writable path; LimitMEMLOCK=, UMask=
      setpriv --bounding-set=-all,+bpf,... [--no-new-privs]
                                                    CapabilityBoundingSet=, NoNewPrivileges=
        python3 THIS_FILE stage2 SPEC              MemoryDenyWriteExecute= (PR_SET_MDWE and the
                                                    seccomp rules systemd 252 uses), the seccomp
                                                    filters of RestrictAddressFamilies=,
                                                    RestrictNamespaces=, RestrictRealtime=,
                                                    RestrictSUIDSGID=, LockPersonality=,
                                                    SystemCallArchitectures=, SystemCallFilter=
                                                    (@system-service expanded by systemd-analyze)
                                                    with SystemCallErrorNumber=, last
          gpuprobed --daemon --foreground --config FILE

Every stage execs the next: the daemon keeps the pid the test started, so the test reads back from
/proc/PID what the kernel holds for it (capabilities, no_new_privs, seccomp, mounts, namespaces,
umask, memlock) before it trusts the run. NOTIFY_SOCKET is an abstract socket of the test's:
READY=1 and STOPPING=1 must come from the daemon's own pid (Type=notify, NotifyAccess=main).

Then simulated-GPU workloads are traced, run by another user (nobody) in another session, which
is what the unit's capabilities are for: /metrics equals one's own accounting, ExecReload='s
signal reloads the configuration, a second one that stays is in the report SIGTERM writes, and
SIGTERM leaves no uprobe link. A directive the test does not know makes it skip (and name it)
rather than claim a sandbox it did not build; the parts of a directive that only systemd's cgroup
set-up applies, or that this machine's own limits keep out of reach (a container's bounding set),
are reported as skipped tests of their own, one per directive, with why.

The last test starts the daemon with systemd itself (systemd-run, the unit's [Service]
properties) where PID 1 is systemd, and skips elsewhere.

Run as a script (stage1/stage2) this file is the sandbox's own set-up, not a test.
"""
import configparser
import ctypes
import errno
import functools
import importlib.util
import json
import os
import pwd
import re
import resource
import secrets
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import types

import pytest

import gp
import test_daemon
from test_daemon import CURL, free_port, one, parse, series, wait_until

UNIT_PATH = os.path.join(gp.ROOT, "systemd", "gpuprobed.service")
SHIPPED_CONF = os.path.join(gp.ROOT, "config", "gpuprobed.conf")

# ---- the unit -------------------------------------------------------------------------------

# Directives whose values are lists that further lines extend (an empty assignment resets them).
LIST_DIRECTIVES = {"CapabilityBoundingSet", "SystemCallFilter", "RestrictAddressFamilies",
                   "SystemCallArchitectures", "RestrictNamespaces", "StateDirectory"}


def read_unit(path=UNIT_PATH):
    """{section: {directive: [values, one per assignment]}} as systemd reads the file: comments,
    continuation lines, an empty assignment that resets a list."""
    out, section, pending = {}, None, ""
    for raw in open(path):
        line = raw.rstrip("\n")
        if pending:
            line, pending = pending + line.lstrip(), ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out.setdefault(section, {})
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if key in LIST_DIRECTIVES and value == "":
            out[section][key] = []
        else:
            out[section].setdefault(key, []).append(value)
    return out


PARANOID_DROP_IN = os.path.join(gp.ROOT, "systemd", "perf-event-paranoid.conf")


def perf_event_paranoid():
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        return int(f.read())


def service(path=UNIT_PATH):
    """The unit's [Service], with the drop-in `make install` adds where kernel.perf_event_paranoid is
    above 2 (CAP_SYS_ADMIN for perf_event_open): the unit as it is installed on this machine."""
    svc = read_unit(path).get("Service", {})
    if path == UNIT_PATH and perf_event_paranoid() > 2:
        for key, values in read_unit(PARANOID_DROP_IN).get("Service", {}).items():
            svc.setdefault(key, []).extend(values)
    return svc


def last(svc, key, default=None):
    return svc[key][-1] if svc.get(key) else default


def boolean(value):
    v = (value or "").lower()
    if v in ("1", "yes", "true", "on"):
        return True
    if v in ("", "0", "no", "false", "off"):
        return False
    raise ValueError(value)


# What the unit may say, and who takes care of it: the sandbox below, the test itself, or no one
# (the service manager's own behaviour, nothing a process carries).
SANDBOX_DIRECTIVES = {
    "CapabilityBoundingSet", "NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp",
    "PrivateMounts", "PrivateDevices", "ProtectKernelTunables", "ProtectKernelModules",
    "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock", "ProtectHostname",
    "RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality",
    "MemoryDenyWriteExecute", "RestrictAddressFamilies", "SystemCallArchitectures",
    "SystemCallFilter", "SystemCallErrorNumber", "StateDirectory", "StateDirectoryMode", "UMask",
    "LimitMEMLOCK", "User",
}
# Type=/NotifyAccess= (the notify socket), ExecStart= (the daemon's arguments), ExecReload= (the
# signal sent), TimeoutStopSec= (how long SIGTERM may take), ExecStopPost= (run by the test after
# the stop, outside the sandbox as its '+' says) are the test's; Restart=, RestartSec= are what
# systemd does once the process is gone.
TEST_DIRECTIVES = {"Type", "NotifyAccess", "ExecStart", "ExecReload", "TimeoutStopSec", "ExecStopPost"}
MANAGER_DIRECTIVES = {"Restart", "RestartSec"}

# The parts of a directive only systemd's cgroup set-up applies (BPF device programs on the
# service's cgroup): reported as skipped tests, never pretended.
NOT_RECONSTRUCTED = {
    "PrivateDevices": "its DevicePolicy=closed (a BPF_PROG_TYPE_CGROUP_DEVICE program on the service's "
                      "cgroup) needs systemd's cgroup; the private /dev, the dropped CAP_MKNOD/CAP_SYS_RAWIO "
                      "and the @raw-io denial are reconstructed",
    "ProtectClock": "its DeviceAllow=char-rtc r (a device-cgroup program) needs systemd's cgroup; the @clock "
                    "denial and the dropped CAP_SYS_TIME/CAP_WAKE_ALARM are reconstructed",
}

CAPS = ["chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
        "setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
        "ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
        "sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
        "lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
        "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore"]

# Capabilities systemd takes out of the bounding set for a directive (systemd.exec(5)).
IMPLIED_CAP_DROPS = {"PrivateDevices": {"mknod", "sys_rawio"}, "ProtectKernelModules": {"sys_module"},
                     "ProtectKernelLogs": {"syslog"}, "ProtectClock": {"sys_time", "wake_alarm"}}
# System call groups systemd denies for a directive, whatever SystemCallFilter= says.
IMPLIED_DENIALS = {"ProtectKernelModules": ["@module"], "ProtectKernelLogs": ["syslog"],
                   "ProtectClock": ["@clock"], "PrivateDevices": ["@raw-io"],
                   "ProtectKernelTunables": ["_sysctl"], "ProtectHostname": ["sethostname", "setdomainname"]}

NAMESPACES = {"cgroup": 0x02000000, "ipc": 0x08000000, "net": 0x40000000, "mnt": 0x00020000,
              "pid": 0x20000000, "user": 0x10000000, "uts": 0x04000000, "time": 0x00000080}
ADDRESS_FAMILIES = {"AF_UNSPEC": 0, "AF_UNIX": 1, "AF_LOCAL": 1, "AF_INET": 2, "AF_AX25": 3, "AF_IPX": 4,
                    "AF_APPLETALK": 5, "AF_NETROM": 6, "AF_BRIDGE": 7, "AF_ATMPVC": 8, "AF_X25": 9,
                    "AF_INET6": 10, "AF_ROSE": 11, "AF_DECnet": 12, "AF_NETBEUI": 13, "AF_SECURITY": 14,
                    "AF_KEY": 15, "AF_NETLINK": 16, "AF_PACKET": 17, "AF_ASH": 18, "AF_ECONET": 19,
                    "AF_ATMSVC": 20, "AF_RDS": 21, "AF_SNA": 22, "AF_IRDA": 23, "AF_PPPOX": 24,
                    "AF_WANPIPE": 25, "AF_LLC": 26, "AF_IB": 27, "AF_MPLS": 28, "AF_CAN": 29, "AF_TIPC": 30,
                    "AF_BLUETOOTH": 31, "AF_IUCV": 32, "AF_RXRPC": 33, "AF_ISDN": 34, "AF_PHONET": 35,
                    "AF_IEEE802154": 36, "AF_CAIF": 37, "AF_ALG": 38, "AF_NFC": 39, "AF_VSOCK": 40,
                    "AF_KCM": 41, "AF_QIPCRTR": 42, "AF_SMC": 43, "AF_XDP": 44, "AF_MCTP": 45}
PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000
S_ISUID, S_ISGID, O_CREAT = 0o4000, 0o2000, 0o100
PR_SET_MDWE, PR_GET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 66, 1
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def own_caps(field="CapBnd"):
    """The capabilities of this process's set `field` (CapBnd, CapEff): a container may hold fewer
    than all."""
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            mask = int(line.split()[1], 16)
            return {c for i, c in enumerate(CAPS) if mask >> i & 1}
    return set()


def memlock_settable(limit):
    """Whether this process may set RLIMIT_MEMLOCK to [soft, hard] (-1: infinity): raising the hard
    limit takes CAP_SYS_RESOURCE."""
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    want = resource.RLIM_INFINITY if limit[1] < 0 else limit[1]
    raising = hard != resource.RLIM_INFINITY and (want == resource.RLIM_INFINITY or want > hard)
    return not raising or "sys_resource" in own_caps("CapEff")


def mdwe_available():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc.prctl(PR_GET_MDWE, 0, 0, 0, 0) >= 0


def reconstruction_gaps(svc):
    """{directive: why} for what the sandbox cannot apply: the cgroup parts only systemd applies, and
    what this machine's own limits (a container's bounding set) keep out of reach."""
    gaps = {k: why for k, why in NOT_RECONSTRUCTED.items() if k in svc}
    if svc.get("CapabilityBoundingSet"):
        named = {c.lower().removeprefix("cap_") for v in svc["CapabilityBoundingSet"] for c in v.lstrip("~").split()}
        lacking = sorted(named - own_caps())
        if lacking and not any(v.startswith("~") for v in svc["CapabilityBoundingSet"]):
            gaps["CapabilityBoundingSet"] = (
                f"{', '.join('CAP_' + c.upper() for c in lacking)} not in this machine's own bounding set "
                "(a container's): the daemon runs with the others only, as systemd could not give more either")
    if svc.get("LimitMEMLOCK") and not memlock_settable(parse_limit(last(svc, "LimitMEMLOCK"))):
        gaps["LimitMEMLOCK"] = (f"{last(svc, 'LimitMEMLOCK')} needs CAP_SYS_RESOURCE to raise the hard limit "
                                f"({resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]} bytes here), which this "
                                "machine's root lacks: the daemon runs with the inherited limit")
    if svc.get("MemoryDenyWriteExecute") and boolean(last(svc, "MemoryDenyWriteExecute")) and not mdwe_available():
        gaps["MemoryDenyWriteExecute"] = ("PR_SET_MDWE needs Linux 6.3: only the seccomp rules "
                                          "(systemd 252's implementation) apply")
    return gaps


class Unreconstructable(Exception):
    """The unit says something this test cannot rebuild: the test skips with this reason."""


@functools.lru_cache(maxsize=None)
def syscall_group(name):
    """The system calls of a systemd group, nested @groups expanded, as this machine's
    systemd-analyze lists them."""
    exe = shutil.which("systemd-analyze")
    if not exe:
        raise Unreconstructable("systemd-analyze (package systemd) is needed to expand SystemCallFilter= groups")
    r = subprocess.run([exe, "syscall-filter", "--no-pager", name], capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise Unreconstructable(f"systemd-analyze syscall-filter {name}: {r.stderr.strip()}")
    names = set()
    for line in r.stdout.splitlines():
        if not line.startswith((" ", "\t")):  # the group's own name
            continue
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        names |= syscall_group(entry) if entry.startswith("@") else {entry}
    if not names:
        raise Unreconstructable(f"systemd-analyze knows no system call group {name}")
    return frozenset(names)


def expand(entries):
    out = set()
    for e in entries:
        out |= syscall_group(e) if e.startswith("@") else {e}
    return out


def cap_mask(names):
    return sum(1 << CAPS.index(n) for n in names)


def parse_limit(value):
    """LimitMEMLOCK=: infinity, N with K/M/G/T suffixes (1024-based), soft:hard."""
    def one(v):
        v = v.strip()
        if v == "infinity":
            return -1  # RLIM_INFINITY
        m = re.fullmatch(r"(\d+)([KMGTPE]?)", v)
        if not m:
            raise Unreconstructable(f"LimitMEMLOCK={value}: not understood by this test")
        return int(m.group(1)) * 1024 ** " KMGTPE".index(m.group(2) or " ")
    soft, _, hard = value.partition(":")
    return [one(soft), one(hard or soft)]


class Sandbox:
    """What the unit's [Service] section asks of the process, as two stage specifications and the
    commands that apply them. `svc` may be a subset of the unit's directives (to bisect)."""

    def __init__(self, svc):
        self.svc = svc
        for key in svc:
            if key not in SANDBOX_DIRECTIVES | TEST_DIRECTIVES | MANAGER_DIRECTIVES:
                raise Unreconstructable(f"{key}= is in the unit but this test has no reconstruction of it: add one")
        on = {k for k in SANDBOX_DIRECTIVES if k in svc and svc[k] and self._bool_or_value(k)}
        self.on = on
        user = last(svc, "User", "root")
        if user not in ("root", "0"):
            raise Unreconstructable(f"User={user}: this test runs the daemon as root only")

        # capabilities
        caps = set(CAPS)
        if "CapabilityBoundingSet" in svc:
            for value in svc["CapabilityBoundingSet"]:
                invert = value.startswith("~")
                named = {c.lower().removeprefix("cap_") for c in value.lstrip("~").split()}
                unknown = named - set(CAPS)
                if unknown:
                    raise Unreconstructable(f"CapabilityBoundingSet: unknown {sorted(unknown)}")
                caps = caps - named if invert else (named if caps == set(CAPS) else caps | named)
        for directive, drops in IMPLIED_CAP_DROPS.items():
            if directive in on:
                caps -= drops
        own = own_caps()
        self.caps = sorted(caps & own, key=CAPS.index)
        seccomp_used = bool(on & {"SystemCallFilter", "RestrictAddressFamilies", "MemoryDenyWriteExecute",
                                  "RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality",
                                  "SystemCallArchitectures", "ProtectKernelModules", "ProtectKernelLogs",
                                  "ProtectClock", "PrivateDevices", "ProtectKernelTunables", "ProtectHostname"})
        # systemd sets no_new_privs itself when it installs seccomp filters without CAP_SYS_ADMIN
        self.nnp = "NoNewPrivileges" in on or (seccomp_used and "sys_admin" not in caps)

        self.protect_system = last(svc, "ProtectSystem", "no").lower()
        self.protect_home = last(svc, "ProtectHome", "no").lower()
        if self.protect_system in ("1", "true", "on"):
            self.protect_system = "yes"
        if self.protect_home in ("1", "true", "on"):
            self.protect_home = "yes"
        if self.protect_system not in ("no", "yes", "full", "strict", "0", "false", "off"):
            raise Unreconstructable(f"ProtectSystem={self.protect_system}: not understood by this test")
        if self.protect_home not in ("no", "yes", "read-only", "tmpfs", "0", "false", "off"):
            raise Unreconstructable(f"ProtectHome={self.protect_home}: not understood by this test")
        private_tmp = last(svc, "PrivateTmp", "no")
        if private_tmp.lower() not in ("yes", "no", "true", "false", "1", "0", "on", "off"):
            raise Unreconstructable(f"PrivateTmp={private_tmp}: not understood by this test")
        self.umask = int(last(svc, "UMask"), 8) if "UMask" in svc else None
        self.memlock = parse_limit(last(svc, "LimitMEMLOCK")) if "LimitMEMLOCK" in svc else None
        if self.memlock and not memlock_settable(self.memlock):
            self.memlock = None  # a gap: reconstruction_gaps() says so
        self.state_mode = int(last(svc, "StateDirectoryMode", "0755"), 8)
        self.filters = self._filters() if seccomp_used else []

    def _bool_or_value(self, key):
        value = last(self.svc, key, "")
        if key in ("ProtectSystem", "ProtectHome", "ProtectHostname", "ProtectControlGroups", "RestrictNamespaces"):
            return value.lower() not in ("", "no", "false", "off", "0")
        if key in ("CapabilityBoundingSet", "SystemCallFilter", "RestrictAddressFamilies", "SystemCallArchitectures",
                   "SystemCallErrorNumber", "StateDirectory", "StateDirectoryMode", "UMask", "LimitMEMLOCK", "User"):
            return bool(self.svc[key])
        try:
            return boolean(value)
        except ValueError:
            raise Unreconstructable(f"{key}={value}: not understood by this test")

    # -- seccomp, in the order systemd's exec_child installs them; the system call filter last --

    def _filters(self):
        on, svc = self.on, self.svc
        ep = ("ERRNO", errno.EPERM)
        filters = []

        def deny(what, rules, default=("ALLOW",)):
            filters.append({"what": what, "default": list(default), "rules": rules})

        if "RestrictAddressFamilies" in on:
            words = " ".join(svc["RestrictAddressFamilies"]).split()
            invert = bool(words) and words[0].startswith("~")
            fams = set()
            for w in words:
                w = w.lstrip("~")
                if w == "none":
                    continue
                if w not in ADDRESS_FAMILIES:
                    raise Unreconstructable(f"RestrictAddressFamilies: unknown family {w}")
                fams.add(ADDRESS_FAMILIES[w])
            eaf = ("ERRNO", errno.EAFNOSUPPORT)
            if invert:
                rules = [[eaf, "socket", [[0, "EQ", f]]] for f in sorted(fams)]
            else:  # systemd: below the first, above the last, and each one between not listed
                lo, hi = (min(fams), max(fams)) if fams else (0, -1)
                rules = [[eaf, "socket", [[0, "LT", lo]]]] if lo > 0 else []
                rules += [[eaf, "socket", [[0, "GT", hi]]]] if fams else [[eaf, "socket", []]]
                rules += [[eaf, "socket", [[0, "EQ", f]]] for f in range(lo, hi + 1) if f not in fams]
            deny("RestrictAddressFamilies", rules)
        if "MemoryDenyWriteExecute" in on:
            # systemd 252 (Debian 12) does it with these rules; later ones use PR_SET_MDWE where the
            # kernel has it. Stage 2 applies both: tracing must work under either.
            deny("MemoryDenyWriteExecute", [
                [ep, "mmap", [[2, "MASKED_EQ", PROT_EXEC | PROT_WRITE, PROT_EXEC | PROT_WRITE]]],
                [ep, "mprotect", [[2, "MASKED_EQ", PROT_EXEC, PROT_EXEC]]],
                [ep, "pkey_mprotect", [[2, "MASKED_EQ", PROT_EXEC, PROT_EXEC]]],
                [ep, "shmat", [[2, "MASKED_EQ", SHM_EXEC, SHM_EXEC]]]])
        if "RestrictRealtime" in on:  # SCHED_OTHER, SCHED_BATCH, SCHED_IDLE only
            rules = [[ep, "sched_setscheduler", [[1, "EQ", p]]] for p in range(7) if p not in (0, 3, 5)]
            deny("RestrictRealtime", rules + [[ep, "sched_setscheduler", [[1, "GT", 6]]]])
        if "RestrictSUIDSGID" in on:
            rules = []
            for m in (S_ISUID, S_ISGID):
                rules += [[ep, "chmod", [[1, "MASKED_EQ", m, m]]], [ep, "fchmod", [[1, "MASKED_EQ", m, m]]],
                          [ep, "fchmodat", [[2, "MASKED_EQ", m, m]]], [ep, "mkdir", [[1, "MASKED_EQ", m, m]]],
                          [ep, "mkdirat", [[2, "MASKED_EQ", m, m]]], [ep, "mknod", [[1, "MASKED_EQ", m, m]]],
                          [ep, "mknodat", [[2, "MASKED_EQ", m, m]]], [ep, "creat", [[1, "MASKED_EQ", m, m]]],
                          [ep, "open", [[1, "MASKED_EQ", O_CREAT, O_CREAT], [2, "MASKED_EQ", m, m]]],
                          [ep, "openat", [[2, "MASKED_EQ", O_CREAT, O_CREAT], [3, "MASKED_EQ", m, m]]]]
            deny("RestrictSUIDSGID", rules + [[ep, "openat2", []]])  # its flags are out of reach
        if "RestrictNamespaces" in on:
            value = " ".join(svc["RestrictNamespaces"])
            if value.lower() in ("yes", "true", "on", "1"):
                blocked = set(NAMESPACES)
            else:
                invert = value.startswith("~")
                named = set(value.lstrip("~").split())
                if named - set(NAMESPACES):
                    raise Unreconstructable(f"RestrictNamespaces={value}: not understood by this test")
                blocked = named if invert else set(NAMESPACES) - named
            rules = []
            for ns in sorted(blocked):
                f = NAMESPACES[ns]
                rules += [[ep, "unshare", [[0, "MASKED_EQ", f, f]]], [ep, "clone", [[0, "MASKED_EQ", f, f]]],
                          [ep, "setns", [[1, "MASKED_EQ", f, f]]]]
            if blocked:
                # clone3's flags are in memory: ENOSYS, so that glibc falls back to clone()
                rules += [[("ERRNO", errno.ENOSYS), "clone3", []]]
                if blocked == set(NAMESPACES):
                    rules += [[ep, "setns", [[1, "EQ", 0]]]]
            deny("RestrictNamespaces", rules)
        for directive, groups in IMPLIED_DENIALS.items():
            if directive in on:
                deny(directive, [[ep, name, []] for name in sorted(expand(groups))])
        if "SystemCallArchitectures" in on:
            archs = " ".join(svc["SystemCallArchitectures"]).split()
            if archs != ["native"]:
                raise Unreconstructable(f"SystemCallArchitectures={' '.join(archs)}: only native is reconstructed")
            filters.append({"what": "SystemCallArchitectures", "default": ["ALLOW"], "rules": [],
                            "native_only": True})
        if "LockPersonality" in on:
            filters.append({"what": "LockPersonality", "default": ["ALLOW"], "rules": [], "personality": True})
        if "SystemCallFilter" in on:
            allow, deny_mode, denied = set(), None, set()
            for value in svc["SystemCallFilter"]:
                invert = value.startswith("~")
                names = expand(value.lstrip("~").split())
                if deny_mode is None:
                    deny_mode = invert
                    if not invert:
                        allow |= expand(["@default"])  # systemd adds it to every allow-list
                if deny_mode:
                    denied = denied - names if not invert else denied | names
                else:
                    allow = allow - names if invert else allow | names
            errno_name = last(svc, "SystemCallErrorNumber")
            if errno_name is not None:
                if not hasattr(errno, errno_name):
                    raise Unreconstructable(f"SystemCallErrorNumber={errno_name}: not an errno name")
                action = ("ERRNO", getattr(errno, errno_name))
            else:
                action = ("KILL_PROCESS",)
            if deny_mode:
                deny("SystemCallFilter", [[action, n, []] for n in sorted(denied)])
            else:
                filters.append({"what": "SystemCallFilter", "default": list(action),
                                "rules": [[("ALLOW",), n, []] for n in sorted(allow)]})
        return filters

    # -- the commands --

    def argv(self, daemon_argv, conf, state_dir):
        mounts = {
            "host_mnt_ns": os.readlink("/proc/self/ns/mnt"),
            "protect_system": self.protect_system, "protect_home": self.protect_home,
            "private_tmp": "PrivateTmp" in self.on, "private_devices": "PrivateDevices" in self.on,
            "kernel_tunables": "ProtectKernelTunables" in self.on,
            "kernel_modules": "ProtectKernelModules" in self.on, "kernel_logs": "ProtectKernelLogs" in self.on,
            "control_groups": "ProtectControlGroups" in self.on,
            "readable": [str(conf)], "writable": [str(state_dir)],
            "umask": self.umask, "memlock": self.memlock,
        }
        later = {"mdwe": "MemoryDenyWriteExecute" in self.on, "filters": self.filters}
        ns = ["--mount", "--propagation", "slave"] + (["--uts"] if "ProtectHostname" in self.on else [])
        bounding = ",".join(["-all"] + [f"+{c}" for c in self.caps])
        return [shutil.which("unshare"), *ns, "--", sys.executable, os.path.abspath(__file__), "stage1",
                json.dumps(mounts), "--",
                shutil.which("setpriv"), f"--bounding-set={bounding}", "--inh-caps=-all",
                *(["--no-new-privs"] if self.nnp else []), "--",
                sys.executable, os.path.abspath(__file__), "stage2", json.dumps(later), "--", *daemon_argv]

    def missing_tools(self):
        return [t for t in ("unshare", "setpriv") if not shutil.which(t)]


# ---- stage 1: the mount namespace (runs as root with every capability) -----------------------

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_SLAVE, MS_RELATIME, MS_STRICTATIME = 1 << 19, 1 << 21, 1 << 24
MNT_DETACH = 2


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.personality.argtypes = [ctypes.c_ulong]
    return libc


def _mount(libc, source, target, fstype, flags, data=None):
    enc = (lambda s: s.encode() if isinstance(s, str) else s)
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)):
        e = ctypes.get_errno()
        raise OSError(e, f"mount({source}, {target}, {fstype}, {flags:#x}): {os.strerror(e)}")


def mountinfo(pid="self"):
    """[(mount point, per-mount options, fs type)] in the order the kernel lists them."""
    out = []
    for line in open(f"/proc/{pid}/mountinfo"):
        left, _, right = line.partition(" - ")
        f = left.split()
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), f[4])
        out.append((point, set(f[5].split(",")), right.split()[0]))
    return out


def under(path, prefix):
    return prefix == "/" or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def mount_of(path, mounts):
    """The mount that holds path: the last listed one whose mount point is its longest prefix."""
    best = None
    for m in mounts:
        if under(path, m[0]) and (best is None or len(m[0]) >= len(best[0])):
            best = m
    return best


def stage1(spec, argv):
    libc = _libc()
    # never touch the host's mounts: this must be a namespace of our own
    if os.readlink("/proc/self/ns/mnt") == spec["host_mnt_ns"]:
        sys.exit("sandbox stage1: not in a private mount namespace; refusing to remount anything")
    _mount(libc, None, "/", None, MS_REC | MS_SLAVE)  # PrivateMounts=: the host's reach us, ours never it

    def remount(point, opts, ro):
        flags = MS_REMOUNT | MS_BIND | (MS_RDONLY if ro else 0)  # MS_BIND: this mount only, never the fs
        for o, f in (("nosuid", MS_NOSUID), ("nodev", MS_NODEV), ("noexec", MS_NOEXEC),
                     ("noatime", MS_NOATIME), ("nodiratime", MS_NODIRATIME), ("relatime", MS_RELATIME)):
            if o in opts:
                flags |= f
        if not opts & {"noatime", "relatime"}:
            flags |= MS_STRICTATIME
        try:
            _mount(libc, None, point, None, flags)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.EACCES):  # a mount point gone or out of reach
                raise

    def bind_remount(path, ro, exclude=()):
        """systemd's bind_remount_recursive(): path (made a mount point) and every mount below it."""
        if not os.path.lexists(path):
            return
        if not any(m[0] == path for m in mountinfo()):
            _mount(libc, path, path, None, MS_BIND | MS_REC)
        for point, opts, _ in mountinfo():
            if under(point, path) and not any(under(point, e) for e in exclude):
                remount(point, opts, ro)

    # what the new mounts hide and we still need: the test's files, /dev's nodes and mounts
    keep = {p: os.open(p, os.O_PATH) for p in spec["readable"] + spec["writable"]}
    dev_nodes = {}
    for n in ("null", "zero", "full", "random", "urandom", "tty"):
        try:
            st = os.stat(f"/dev/{n}")
        except OSError:
            continue
        if (stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)) and st.st_rdev:
            dev_nodes[n] = st
    dev_mounts = {n: os.open(f"/dev/{n}", os.O_PATH | os.O_DIRECTORY)
                  for n in ("pts", "shm", "mqueue", "hugepages") if os.path.isdir(f"/dev/{n}")}

    home = ["/home", "/root", "/run/user"]
    api = ["/proc", "/sys", "/dev"]
    ps = spec["protect_system"]
    if ps == "strict":  # everything read-only but the API file systems (and /home & co unless ProtectHome=)
        exclude = api + ([] if spec["protect_home"] not in ("no", "0", "false", "off") else home)
        bind_remount("/", True, exclude)
    elif ps in ("yes", "full"):
        for p in ["/usr", "/boot", "/efi"] + (["/etc"] if ps == "full" else []):
            bind_remount(p, True)

    # empty, mode-0 nodes to mount over what must be inaccessible (systemd's /run/systemd/inaccessible)
    staging = None

    def inaccessible(path):
        nonlocal staging
        if not os.path.lexists(path):
            return
        if staging is None:
            staging = "/run"
            _mount(libc, "tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755")
            os.mkdir("/run/dir", 0)
            os.close(os.open("/run/reg", os.O_CREAT | os.O_WRONLY, 0))
            os.chmod("/run/dir", 0)
            os.chmod("/run/reg", 0)
        _mount(libc, "/run/dir" if os.path.isdir(path) else "/run/reg", path, None, MS_BIND)
        remount(path, mount_of(path, mountinfo())[1], True)

    ph = spec["protect_home"]
    for p in home:
        if not os.path.isdir(p):
            continue
        if ph == "read-only":
            bind_remount(p, True)
        elif ph == "yes":
            inaccessible(p)
        elif ph == "tmpfs":
            _mount(libc, "tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755")

    if spec["private_tmp"]:
        for p in ("/tmp", "/var/tmp"):
            if os.path.isdir(p):
                _mount(libc, "tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")

    if spec["private_devices"]:
        old = os.umask(0)
        _mount(libc, "tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC | MS_STRICTATIME, "mode=0755")
        for n, st in dev_nodes.items():
            os.mknod(f"/dev/{n}", st.st_mode, st.st_rdev)
        for n, fd in dev_mounts.items():
            os.mkdir(f"/dev/{n}", 0o1777 if n == "shm" else 0o755)
            try:
                _mount(libc, f"/proc/self/fd/{fd}", f"/dev/{n}", None, MS_BIND)
            except OSError:
                if n in ("pts", "shm"):  # systemd fails without those, and goes on without the others
                    raise
        os.symlink("pts/ptmx", "/dev/ptmx")
        os.symlink("/run/systemd/journal/dev-log", "/dev/log")
        for src, dst in (("/proc/self/fd", "fd"), ("/proc/self/fd/0", "stdin"), ("/proc/self/fd/1", "stdout"),
                         ("/proc/self/fd/2", "stderr")):
            os.symlink(src, f"/dev/{dst}")
        os.umask(old)

    if spec["kernel_tunables"]:
        for p in ("/proc/acpi", "/proc/apm", "/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq",
                  "/proc/latency_stats", "/proc/mtrr", "/proc/scsi", "/proc/sys", "/proc/sysrq-trigger",
                  "/proc/timer_stats"):
            bind_remount(p, True)
        for p in ("/proc/kallsyms", "/proc/kcore"):
            inaccessible(p)
        bind_remount("/sys", True, [] if spec["control_groups"] else ["/sys/fs/cgroup"])
    if spec["kernel_modules"]:
        for p in sorted({os.path.realpath(p) for p in ("/lib/modules", "/usr/lib/modules")}):
            inaccessible(p)
    if spec["kernel_logs"]:
        inaccessible("/proc/kmsg")
        inaccessible("/dev/kmsg")
    if spec["control_groups"]:
        bind_remount("/sys/fs/cgroup", True)

    # The test's configuration (read-only, as /etc is) and state directory (StateDirectory=: the one
    # writable path) where the test keeps them, even below a private /tmp.
    for path, fd in keep.items():
        ro = path in spec["readable"]
        st, here = os.fstat(fd), None
        try:
            here = os.stat(path)
        except OSError:
            pass
        if here is None or (here.st_dev, here.st_ino) != (st.st_dev, st.st_ino):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if stat.S_ISDIR(st.st_mode):
                os.makedirs(path, exist_ok=True)
            else:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND)
        else:
            _mount(libc, path, path, None, MS_BIND)
        remount(path, mount_of(path, mountinfo())[1], ro)
        os.close(fd)
    for fd in dev_mounts.values():
        os.close(fd)
    if staging:
        libc.umount2(staging.encode(), MNT_DETACH)

    if spec["memlock"]:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, tuple(resource.RLIM_INFINITY if v < 0 else v
                                                          for v in spec["memlock"]))
    if spec["umask"] is not None:
        os.umask(spec["umask"])
    os.chdir("/")
    os.execv(argv[0], argv)


# ---- stage 2: MemoryDenyWriteExecute= and the seccomp filters (after setpriv) ----------------

def stage2(spec, argv):
    libc = _libc()
    if spec["mdwe"] and libc.prctl(PR_GET_MDWE, 0, 0, 0, 0) >= 0:
        if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0):
            sys.exit(f"sandbox stage2: PR_SET_MDWE: {os.strerror(ctypes.get_errno())}")
        if libc.prctl(PR_GET_MDWE, 0, 0, 0, 0) != PR_MDWE_REFUSE_EXEC_GAIN:
            sys.exit("sandbox stage2: PR_SET_MDWE did not take")
    if spec["filters"]:
        import seccomp
        ops = {"EQ": seccomp.EQ, "NE": seccomp.NE, "LT": seccomp.LT, "LE": seccomp.LE, "GT": seccomp.GT,
               "GE": seccomp.GE, "MASKED_EQ": seccomp.MASKED_EQ}

        def action(a):
            return {"ALLOW": lambda: seccomp.ALLOW, "ERRNO": lambda: seccomp.ERRNO(a[1]),
                    "KILL_PROCESS": lambda: seccomp.KILL_PROCESS}[a[0]]()

        for flt in spec["filters"]:
            f = seccomp.SyscallFilter(action(flt["default"]))
            f.set_attr(seccomp.Attr.CTL_NNP, 0)  # no_new_privs is NoNewPrivileges='s (setpriv), not libseccomp's
            if not flt.get("native_only"):  # as systemd: each filter judges its own architecture only
                f.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ALLOW)
            rules = flt["rules"]
            if flt.get("personality"):
                rules = [[("ERRNO", errno.EPERM), "personality", [[0, "NE", libc.personality(0xffffffff)]]]]
            for act, name, args in rules:
                try:
                    f.add_rule(action(act), name, *[seccomp.Arg(a[0], ops[a[1]], *a[2:]) for a in args])
                except RuntimeError:
                    if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) == -1:
                        continue  # a name libseccomp does not know: systemd ignores those too
                    raise
            f.load()
    os.execv(argv[0], argv)


# ---- the tests ------------------------------------------------------------------------------

def sandbox_or_skip(svc=None):
    try:
        sb = Sandbox(service() if svc is None else svc)
    except Unreconstructable as e:
        pytest.skip(f"the unit's sandbox cannot be rebuilt on this machine: {e}")
    if sb.missing_tools():
        pytest.skip(f"{', '.join(sb.missing_tools())} (util-linux) not installed: the sandbox is built with them")
    if sb.filters and importlib.util.find_spec("seccomp") is None:
        pytest.skip("python3-seccomp (libseccomp's Python binding) is not installed: make deps installs it")
    if not CURL:
        pytest.skip("curl is not installed (make deps installs it): the tests scrape with it")
    for hidden in (("/tmp", "/var/tmp") if "PrivateTmp" in sb.on else ()):
        if under(gp.ROOT, hidden):
            pytest.skip(f"the tree is below {hidden}, which PrivateTmp= hides from the daemon as it would "
                        "under systemd: build it elsewhere")
    return sb


def exec_start_args(svc):
    """The unit's ExecStart arguments: its binary becomes the built one, its --config the test's."""
    args = last(svc, "ExecStart").split()[1:]
    if "--config" in args:
        del args[args.index("--config"):args.index("--config") + 2]
    return args


class Notify:
    """An abstract AF_UNIX datagram socket as NOTIFY_SOCKET; messages with their sender's pid."""

    def __init__(self):
        self.name = f"gpuprobed-e2e-{secrets.token_hex(6)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind("\0" + self.name)
        self.sock.settimeout(0.2)
        self.got = []

    def env(self):
        return f"@{self.name}"

    def wait(self, field, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for pid, msg in self.got:
                if field in msg.split("\n"):
                    return pid
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
            except socket.timeout:
                continue
            pid = None
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("3i", cdata[:12])[0]
            self.got.append((pid, data.decode(errors="replace")))
        raise AssertionError(f"no {field} on NOTIFY_SOCKET within {timeout} s: {self.got}")

    def close(self):
        self.sock.close()


class SandboxedDaemon(test_daemon.Daemon):
    """test_daemon's Daemon, started the way the unit starts it: the shipped configuration with
    only the listen address and the state directory changed, and a series per pid (the checks
    below are per process; test_daemon checks the shipped default's group series), systemd's
    environment, the sandbox."""

    def __init__(self, tmp_path, sandbox, notify):
        self.tmp = tmp_path
        self.port = free_port()
        self.state = tmp_path / "state"
        self.conf = tmp_path / "gpuprobed.conf"
        shipped = configparser.ConfigParser(interpolation=None)
        shipped.read(SHIPPED_CONF)
        self.settings = {s: dict(shipped[s]) for s in shipped.sections()}
        self.settings.setdefault("metrics", {})["listen"] = f"127.0.0.1:{self.port}"
        self.settings.setdefault("reports", {})["state_dir"] = str(self.state)
        self.settings["metrics"]["process_labels"] = "pid"
        self.write_conf()
        self.state.mkdir(mode=sandbox.state_mode)  # StateDirectory=, StateDirectoryMode=
        os.chmod(self.state, sandbox.state_mode)
        daemon = [gp.GPUPROBED, *exec_start_args(sandbox.svc), "--config", str(self.conf), "--foreground"]
        env = {"PATH": SYSTEMD_PATH, "LANG": os.environ.get("LANG", "C.UTF-8"), "HOME": "/root",
               "USER": "root", "LOGNAME": "root", "SHELL": "/bin/sh", "INVOCATION_ID": secrets.token_hex(16),
               "NOTIFY_SOCKET": notify.env()}
        self.argv = sandbox.argv(daemon, self.conf, self.state)
        # a session of its own, as systemd's services have (setsid)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        self.held = gp.track(self.proc)  # every stage execs the next: this pid becomes gpuprobed's
        self.err = gp.LineReader(self.proc.stderr)
        self.stderr = ""
        self.wait_line("metrics on http://")


@pytest.fixture
def sandboxed(tmp_path):
    started = []

    def start(svc=None):
        sb = sandbox_or_skip(svc)
        notify = Notify()
        started.append((None, notify))
        d = SandboxedDaemon(tmp_path, sb, notify)
        started[-1] = (d, notify)
        return d, sb, notify
    yield start
    for d, notify in started:
        if d is not None:
            d.stop()
        notify.close()


def status_of(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def check_sandbox_in_place(pid, sb, d):
    """What the kernel holds for the daemon is what the unit asked for."""
    st = status_of(pid)
    mask = f"{cap_mask(sb.caps):016x}"
    for field in ("CapBnd", "CapPrm", "CapEff"):
        assert st[field] == mask, f"{field} {st[field]} != {mask} ({sb.caps})"
    assert st["CapAmb"] == "0" * 16 and st["CapInh"] == "0" * 16
    assert st["NoNewPrivs"] == ("1" if sb.nnp else "0")
    if sb.filters:
        assert st["Seccomp"] == "2" and int(st.get("Seccomp_filters", len(sb.filters))) >= len(sb.filters), st
    if sb.umask is not None:
        assert int(st["Umask"], 8) == sb.umask
    if sb.memlock:
        limits = [l for l in open(f"/proc/{pid}/limits") if l.startswith("Max locked memory")][0].split()
        want = ["unlimited" if v < 0 else str(v) for v in sb.memlock]
        assert limits[3:5] == want, limits
    assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"), "no mount namespace"
    if "ProtectHostname" in sb.on:
        assert os.readlink(f"/proc/{pid}/ns/uts") != os.readlink("/proc/self/ns/uts"), "no UTS namespace"
    mounts = mountinfo(pid)

    def ro(path):
        m = mount_of(path, mounts)
        return m is not None and "ro" in m[1]
    assert not ro(str(d.state)), "the state directory is not writable"
    assert ro(str(d.conf)), "the configuration is writable"
    if sb.protect_system == "strict":
        for p in ("/", "/usr", "/etc", "/var", "/run", "/var/lib", gp.ROOT, gp.BUILD):
            assert ro(p), f"{p} writable under ProtectSystem=strict"
    if sb.protect_home == "read-only":
        for p in ("/home", "/root"):
            assert not os.path.isdir(p) or ro(p), f"{p} writable under ProtectHome=read-only"
    if "PrivateTmp" in sb.on:
        m = mount_of("/tmp/x", mounts)
        assert m[2] == "tmpfs" and "ro" not in m[1], f"/tmp is not a private writable tmpfs: {m}"
    if "PrivateDevices" in sb.on:
        assert mount_of("/dev/null", mounts)[2] == "tmpfs"
    if "ProtectKernelTunables" in sb.on:
        assert ro("/proc/sys/kernel/pid_max") and ro("/sys/kernel")
        assert mount_of("/proc/kallsyms", mounts)[0] == "/proc/kallsyms"
    if "ProtectControlGroups" in sb.on:
        assert ro("/sys/fs/cgroup")


def check_metrics(d, pid, ref):
    test_daemon.check_metrics(parse(d.scrape()), pid, ref)


def reload_signal(svc):
    m = re.fullmatch(r"\S*kill -(?:s )?(?:SIG)?([A-Z0-9]+) \$MAINPID", last(svc, "ExecReload", ""))
    return getattr(signal, f"SIG{m.group(1)}") if m else None


class OtherUserWorkload(gp.Workload):
    """basic_ops run by an unprivileged user (nobody) in another session than the daemon's: what the
    unit's capabilities are for. The daemon reads that user's /proc/PID/maps and environ and its
    mapped libraries (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH) and resumes the process its BPF program
    stopped when it mapped the CUDA runtime (CAP_KILL: another user, another session)."""

    def __init__(self, refdir, user, hold=False):
        self.ref_path = os.path.join(refdir, f"ref-basic_ops-{time.monotonic_ns()}.json")
        argv = [os.path.join(gp.WORKLOADS, "basic_ops"), "--ref", self.ref_path, *(["--hold"] if hold else [])]
        who = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=gp.sim_env(), text=True, start_new_session=True, **who)
        self.pid = self.proc.pid
        self.stdout = gp.LineReader(self.proc.stdout)


def workload_user():
    """(uid, gid) of nobody, or None (the workloads then run as root, as test_daemon's do)."""
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


@pytest.fixture
def refdir():
    """A directory the workloads' user may write its reference into (pytest's tmp_path is root's)."""
    d = tempfile.mkdtemp(prefix="gpuprobed-e2e-ref-")
    user = workload_user()
    if user:
        os.chown(d, *user)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def exited_workload_pid(d, refdir, user):
    """Runs basic_ops to its end as `user`; the daemon must report it as one exited process."""
    wl = OtherUserWorkload(refdir, user)
    try:
        wl.wait_done(timeout=60)
        wl.finish(timeout=60)
    finally:
        wl.kill()
    pid = str(wl.pid)
    got = wait_until(lambda: series(parse(d.scrape()), "gpuprobed_process_exited", pid=pid) and
                     one(parse(d.scrape()), "gpuprobed_process_exited", pid=pid) == 1)
    assert got, f"the daemon did not report basic_ops ({pid}) as an exited process"
    return pid, wl.ref()


def check_tracing_under(sandboxed, refdir, svc=None):
    """Starts the daemon under the sandbox of `svc` (the unit's [Service] section by default) and
    checks it all; returns the sandbox."""
    user = workload_user()
    d, sb, notify = sandboxed(svc)
    assert notify.wait("READY=1") == d.proc.pid, "READY=1 not from the main process (NotifyAccess=main)"
    check_sandbox_in_place(d.proc.pid, sb, d)

    pid, ref = exited_workload_pid(d, refdir, user)  # a new CUDA process the daemon finds by itself
    check_metrics(d, pid, ref)

    sig = reload_signal(sb.svc)
    if sig is not None:  # ExecReload=: the configuration re-read from inside the sandbox
        d.proc.send_signal(sig)
        d.wait_line("reloaded")
        assert one(parse(d.scrape()), "gpuprobed_config_reloads_total", result="ok") == 1

    wl = OtherUserWorkload(refdir, user, hold=True)  # a CUDA process that stays
    try:
        wl.wait_done(timeout=60)
        assert gp.uprobe_links(held_by=d.proc.pid), "the daemon holds no probe"
        d.held.note()
        assert d.stop(signal.SIGTERM) == 0, d.stderr
        assert notify.wait("STOPPING=1") == d.proc.pid
        links, progs = d.held.released()
        assert not links and not progs, f"links {links} and programs {progs} left after SIGTERM"
        assert "detaching" in d.stderr
        wl.finish()
    finally:
        wl.kill()
    # pinning its registry of holds needs a writable /sys/fs/bpf, which ProtectKernelTunables= (a
    # read-only /sys) does not give: it says so, once, and traces all the same
    unpinned = d.stderr.count("the registry of holds is not pinned")
    assert unpinned == (1 if "ProtectKernelTunables" in sb.on else unpinned) and unpinned <= 1, d.stderr
    stop_post = last(sb.svc, "ExecStopPost")
    if stop_post is not None:  # run as systemd runs it after the stop: '+', outside the sandbox
        assert stop_post.startswith("+"), f"ExecStopPost={stop_post}: in the sandbox it cannot read the pins"
        argv = stop_post[1:].split()
        assert argv[0].endswith("/gpuprobed"), stop_post
        r = subprocess.run([gp.GPUPROBED, *argv[1:]], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout == "", f"ExecStopPost={stop_post}: {r.returncode} {r.stderr}"
    report_path = d.state / "reports" / "current" / "report.json"
    with open(report_path) as f:
        report = json.load(f)
    gp.check_api(gp.process(report, wl.pid), wl.ref())
    gp.check_api(gp.process(report, int(pid)), ref)
    assert report["session"]["mode"] == "daemon"
    if sb.umask is not None:
        assert stat.S_IMODE(os.stat(report_path).st_mode) & sb.umask == 0, "UMask= not applied to the report"
    print(f"sandbox: capabilities {','.join(sb.caps)}; {len(sb.filters)} seccomp filters "
          f"({', '.join(f['what'] for f in sb.filters)}); directives {', '.join(sorted(sb.on))}; "
          f"workloads run as {'uid %d' % user[0] if user else 'root'}")
    return sb


def test_tracing_is_exact_under_the_units_sandbox(sandboxed, refdir):
    """The whole [Service] section at once: the sandbox is in place, another user's workload's
    metrics are exact, ExecReload='s signal reloads, SIGTERM detaches everything and the report
    holds both workloads exactly."""
    check_tracing_under(sandboxed, refdir)


@pytest.mark.parametrize("directive", sorted(reconstruction_gaps(service())) or ["(none)"])
def test_part_not_reconstructed(directive):
    """One skip per part of the unit the sandbox above does not apply here, with why."""
    gaps = reconstruction_gaps(service())
    if directive not in gaps:
        return  # nothing left out
    pytest.skip(f"{directive}= not reconstructed: {gaps[directive]}")


def test_systemd_runs_the_unit_transiently(tmp_path, refdir):
    """With systemd as PID 1: systemd-run starts the daemon with the unit's [Service] properties
    (its own state directory name, no restart), /metrics is exact, systemctl stop detaches."""
    comm = open("/proc/1/comm").read().strip()
    if comm != "systemd":
        pytest.skip(f"PID 1 is {comm!r}, not systemd: systemd-run needs a running systemd (the sandbox "
                    "itself is rebuilt and checked by test_tracing_is_exact_under_the_units_sandbox)")
    for tool in ("systemd-run", "systemctl"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed (package systemd)")
    if not CURL:
        pytest.skip("curl is not installed (make deps installs it): the test scrapes with it")
    svc = service()
    for hidden in ("/tmp", "/var/tmp"):
        if boolean(last(svc, "PrivateTmp", "no")) and under(gp.ROOT, hidden):
            pytest.skip(f"the tree is below {hidden}, which PrivateTmp= hides from the service: build it elsewhere")
    try:
        sb = Sandbox(svc)  # what the kernel must then hold for the service's main process
    except Unreconstructable as e:
        pytest.skip(f"the unit's sandbox cannot be rebuilt on this machine: {e}")
    m = re.fullmatch(r"(\d+)s?", last(svc, "TimeoutStopSec", "90"))
    stop_timeout = (int(m.group(1)) if m else 90) + 30
    name = f"gpuprobed-e2e-{secrets.token_hex(4)}"
    state = f"/var/lib/{name}"  # StateDirectory={name}: the configuration goes in it, read before anything
    port = free_port()
    shipped = configparser.ConfigParser(interpolation=None)
    shipped.read(SHIPPED_CONF)
    shipped["metrics"]["listen"] = f"127.0.0.1:{port}"
    shipped["metrics"]["process_labels"] = "pid"  # the checks below find the workload by its pid
    shipped["reports"]["state_dir"] = state
    os.makedirs(state, mode=0o750)
    conf = os.path.join(state, "gpuprobed.conf")
    with open(conf, "w") as f:
        shipped.write(f)
    props = []
    for key, values in svc.items():
        if key in ("ExecStart", "ExecReload", "Restart", "RestartSec"):
            continue  # the command is given below; a failure must fail the test, not restart
        if key in LIST_DIRECTIVES and len(values) > 1 and all(v and not v.startswith("~") for v in values):
            # a unit's lines of a list add up (the drop-in's CAP_SYS_ADMIN to the unit's set); one -p of
            # systemd-run replaces the one before (systemd 252: the service had only CAP_SYS_ADMIN)
            values = [" ".join(values)]
        for v in (values or [""]):
            if key == "ExecStopPost":
                v = v.replace("@SBINDIR@/gpuprobed", gp.GPUPROBED)
            props += ["-p", f"{key}={name if key == 'StateDirectory' else v}"]
    unit = f"{name}.service"

    def show(prop):
        return subprocess.run(["systemctl", "show", "-p", prop, "--value", unit], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    try:
        r = subprocess.run(["systemd-run", "--unit", unit, "--description", "gpuprobed end-to-end test",
                            *props, "--", gp.GPUPROBED, *exec_start_args(svc), "--config", conf],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"systemd-run: {r.stdout}{r.stderr}"
        assert show("ActiveState") == "active", show("StatusText")
        main = int(show("MainPID"))
        st = status_of(main)
        assert st["CapBnd"] == f"{cap_mask(sb.caps):016x}" and st["NoNewPrivs"] == "1" and st["Seccomp"] == "2", st
        ep = test_daemon.Daemon.__new__(test_daemon.Daemon)
        ep.port, ep.tmp = port, tmp_path
        pid, ref = exited_workload_pid(ep, refdir, workload_user())
        check_metrics(ep, pid, ref)
        held = gp.Held(types.SimpleNamespace(pid=main))  # what the service holds, to be gone after the stop
        held.note()
        assert gp.uprobe_links(held_by=main), "the service holds no probe"
        r = subprocess.run(["systemctl", "stop", unit], capture_output=True, text=True, timeout=stop_timeout)
        assert r.returncode == 0, r.stderr
        links, progs = held.released()
        assert not links and not progs, f"links {links} and programs {progs} left after systemctl stop"
        with open(os.path.join(state, "reports", "current", "report.json")) as f:
            gp.check_api(gp.process(json.load(f), int(pid)), ref)
    except AssertionError:
        log = subprocess.run(["journalctl", "--no-pager", "-n", "50", "-u", unit], capture_output=True,
                             text=True, timeout=30)
        print(log.stdout)
        raise
    finally:
        subprocess.run(["systemctl", "stop", unit], capture_output=True, timeout=stop_timeout)
        subprocess.run(["systemctl", "reset-failed", unit], capture_output=True, timeout=30)
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    # sandbox stages: THIS_FILE stage1|stage2 SPEC -- COMMAND...
    stage, spec, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        sys.exit(f"usage: {sys.argv[0]} stage1|stage2 SPEC -- COMMAND...")
    {"stage1": stage1, "stage2": stage2}[stage](json.loads(spec), command)
