"""Run a command where it cannot reach the network and every connect() it makes is recorded.

The command runs in a fresh network namespace with only the loopback interface up, under
`strace -f -e trace=connect` (every thread and child process). A private mount namespace gives it a
resolver outside loopback (192.0.2.53, a documentation address that nothing answers), `hosts: files dns`
and no name-service cache daemon, so any host-name look-up shows up as a connect() to port 53, whatever
resolver the machine running the tests has (127.0.0.53 or nscd would hide it on loopback).
Used by tests/test_no_network.py and tests/test_ui_security.py; needs strace, and root (or unprivileged
user namespaces) for unshare.
"""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

LOOKUP_RESOLVER = "192.0.2.53"     # TEST-NET-1: no reply, but the look-up is traced as connect(..., :53)

_CONNECT = re.compile(r"connect\(\d+, \{sa_family=(\w+)(.*?)\}")


def remote(line: str) -> str | None:
    """The traced line when it is a connect() that leaves the machine, or None when it is local
    (a Unix socket, 127.0.0.1, ::1) or not a connect() at all."""
    m = _CONNECT.search(line)
    if not m:
        return None
    family, rest = m.groups()
    if family in ("AF_UNIX", "AF_UNSPEC", "AF_NETLINK"):
        return None
    if family == "AF_INET" and 'inet_addr("127.0.0.1")' in rest:
        return None
    if family == "AF_INET6" and '"::1"' in rest:
        return None
    return line


def outbound(trace: Path) -> list[str]:
    """Every connect() in a trace file that leaves the machine."""
    return [line for line in trace.read_text(errors="replace").splitlines() if remote(line)]


def run_offline(argv: list[str], trace: Path, *, cwd: Path, env: dict[str, str], timeout: float
                ) -> subprocess.CompletedProcess[str]:
    """Run `argv` with loopback only and the connect() calls of it and its children written to `trace`
    (see the module docstring); returns the finished process with its output."""
    etc = trace.parent / f"{trace.name}.etc"
    etc.mkdir(exist_ok=True)
    (etc / "resolv.conf").write_text(f"nameserver {LOOKUP_RESOLVER}\noptions timeout:1 attempts:1\n")
    (etc / "nsswitch.conf").write_text("hosts: files dns\n")
    script = " && ".join([
        "ip link set lo up",
        f"mount --bind {shlex.quote(str(etc / 'resolv.conf'))} /etc/resolv.conf",
        f"mount --bind {shlex.quote(str(etc / 'nsswitch.conf'))} /etc/nsswitch.conf",
        "{ [ ! -d /run/nscd ] || mount -t tmpfs tmpfs /run/nscd; }",   # a name-service cache would hide look-ups
        f"exec strace -f -qq --seccomp-bpf -e trace=connect -o {shlex.quote(str(trace))} {shlex.join(argv)}",
    ])
    return subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", script],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
