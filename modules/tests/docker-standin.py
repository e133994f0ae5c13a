#!/usr/bin/env python3
"""A stand-in for Docker, for the NixOS VM test (vm.nix) and its Go twin.

    docker-standin daemon --socket PATH --group GROUP --image DIR --log FILE
    docker run [FLAGS] IMAGE [ARGS...]      (the client, installed as docker)
    docker stop NAME

The daemon runs as root and listens on a Unix socket owned root:GROUP, mode
0660, as dockerd's is: only root and the group's members can connect. The
client connects to $DOCKER_HOST (unix://PATH, default /run/docker.sock),
sends its argv and environment, and hands over its stdin, stdout and stderr,
so what the container prints is the client's output, as with `docker run`.

For each call the daemon appends one JSON line to the log: the caller's
uid, gid and groups (SO_PEERCRED and /proc/PID/status) and its argv. For
`run` it then starts the "container": a child in a mount namespace of its
own where
  - each -v HOST:DEST[:ro] is a bind mount (read-only with :ro), and the
    log line says whether DEST really is read-only there;
  - /opt/venv is a writable copy of the image directory's opt/venv, a
    fixture vLLM tree where vllm-timings finds it as in a vLLM image;
  - /bin holds sh and bash, and PATH is the image's bin/, /bin and the
    daemon's own PATH (an image's base system);
  - --entrypoint and the arguments after the image run as in Docker;
  - -p [IP:]HOSTPORT:8000 sets VLLM_STANDIN_PORT=HOSTPORT: the image's
    `vllm` listens there on 127.0.0.1 instead of on a port of its own
    network namespace (the stand-in has none).
The call lasts as long as the container; a client that goes away, or
`docker stop NAME`, ends it (SIGTERM to its process group).

Only the flags llama-swap's cmd strings use are understood; any other is
refused with exit 125, as Docker refuses an unknown flag.
"""

import array
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading

VALUE_FLAGS = {
    "--name", "-v", "--volume", "-p", "--publish", "-e", "--env",
    "--entrypoint", "--device", "--ipc", "--shm-size", "--gpus",
    "--network", "--runtime",
}
BOOL_FLAGS = {"--rm", "-i", "-t", "-it", "--init", "--privileged"}


def parse_run(argv):
    """Splits `run` arguments into options, image and the command's words."""
    opts = {"volumes": [], "publish": [], "env": [], "name": None, "entrypoint": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-"):
            return opts, a, argv[i + 1:]
        flag, eq, value = a.partition("=")
        if flag in BOOL_FLAGS and not eq:
            i += 1
            continue
        if flag not in VALUE_FLAGS:
            raise ValueError("unknown flag: %s" % a)
        if not eq:
            i += 1
            if i >= len(argv):
                raise ValueError("flag needs a value: %s" % a)
            value = argv[i]
        key = {"-v": "volumes", "--volume": "volumes", "-p": "publish", "--publish": "publish",
               "-e": "env", "--env": "env"}.get(flag)
        if key:
            opts[key].append(value)
        elif flag == "--name":
            opts["name"] = value
        elif flag == "--entrypoint":
            opts["entrypoint"] = value
        i += 1
    raise ValueError("no image")


def peer(conn):
    pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    groups = []
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Groups:"):
                    groups = [int(g) for g in line.split()[1:]]
    except OSError:
        pass
    return {"pid": pid, "uid": uid, "gid": gid, "groups": groups}


def recv_request(conn):
    """One JSON line, with three file descriptors alongside."""
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        msg, anc, _, _ = conn.recvmsg(65536, socket.CMSG_LEN(3 * fds.itemsize))
        if not msg:
            raise EOFError
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
        data += msg
    return json.loads(data), list(fds)


class Daemon:
    def __init__(self, args):
        self.image = args["image"]
        self.log = args["log"]
        self.lock = threading.Lock()
        self.running = {}  # name -> Popen
        self.containers = set()  # every running Popen

    def stop_all(self, *_):
        """SIGTERM: end the containers too, which are sessions of their own."""
        for proc in list(self.containers):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        sys.exit(0)

    def record(self, entry):
        with self.lock, open(self.log, "a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")

    def serve(self, conn):
        try:
            req, fds = recv_request(conn)
        except (EOFError, ValueError):
            conn.close()
            return
        entry = {"caller": peer(conn), "argv": req["argv"]}
        argv = req["argv"]
        status = 125
        try:
            if argv[:1] == ["run"]:
                status = self.run(conn, argv[1:], req.get("env", {}), fds, entry)
            elif argv[:1] == ["stop"] and len(argv) == 2:
                proc = self.running.get(argv[1])
                if proc:
                    os.killpg(proc.pid, signal.SIGTERM)
                status = 0
            else:
                entry["error"] = "the stand-in knows run and stop only"
                self.record(entry)
        except Exception as e:  # the client gets exit 125 and the reason
            entry["error"] = str(e)
            self.record(entry)
            if fds:
                os.write(fds[2], ("docker-standin: %s\n" % e).encode())
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall(b"%d\n" % status)
        except OSError:
            pass
        conn.close()

    def run(self, conn, argv, client_env, fds, entry):
        opts, image, words = parse_run(argv)
        # The image's bin/, then what an image's base system has (here the
        # daemon's own tools: coreutils, util-linux, grep).
        env = {"PATH": "%s/bin:/bin:%s" % (self.image, os.environ.get("PATH", "")), "HOME": "/root"}
        for e in opts["env"]:
            name, eq, value = e.partition("=")
            if eq:
                env[name] = value
            elif name in client_env:
                env[name] = client_env[name]
        for p in opts["publish"]:
            parts = p.split(":")
            if len(parts) < 2:
                raise ValueError("-p %s: want [IP:]HOSTPORT:CONTAINERPORT" % p)
            env["VLLM_STANDIN_PORT"] = parts[-2]
        mounts = []
        for v in opts["volumes"]:
            parts = v.split(":")
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "ro"):
                raise ValueError("-v %s: want HOST:DEST[:ro]" % v)
            mounts.append({"host": parts[0], "dest": parts[1], "ro": len(parts) == 3})
        command = ([opts["entrypoint"]] if opts["entrypoint"] else ["vllm", "serve"]) + words
        entry.update({"image": image, "mounts": mounts, "command": command})
        setup = self.container_setup(mounts)
        # The child checks each mount's read-only flag after mounting, and
        # reports on a pipe before it runs the command. The daemon's own
        # PATH has the tools it mounts and copies with.
        rd, wr = os.pipe()
        env.update({
            "STANDIN_TOOLS": os.environ.get("PATH", ""),
            "STANDIN_REPORT_FD": str(wr),
        })
        proc = subprocess.Popen(
            [shutil.which("unshare"), "--mount", "--propagation", "private", "--",
             shutil.which("bash"), "-euc", setup, "container"] + command,
            stdin=fds[0], stdout=fds[1], stderr=fds[2], env=env, pass_fds=(wr,),
            start_new_session=True,
        )
        os.close(wr)
        with os.fdopen(rd) as r:
            report = r.read()
        entry["readonly"] = json.loads(report) if report else None
        self.record(entry)
        self.containers.add(proc)
        if opts["name"]:
            self.running[opts["name"]] = proc
        # The call ends with the container, or when the client goes away.
        watcher = threading.Thread(target=self.watch, args=(conn, proc), daemon=True)
        watcher.start()
        status = proc.wait()
        self.containers.discard(proc)
        if opts["name"]:
            self.running.pop(opts["name"], None)
        return status if status >= 0 else 128 - status

    @staticmethod
    def watch(conn, proc):
        try:
            conn.recv(1)
        except OSError:
            pass
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def container_setup(self, mounts):
        lines = [
            'container_path=$PATH PATH=$STANDIN_TOOLS',
            "mkdir -p /opt",
            "mount -t tmpfs standin-opt /opt",
            "cp -r %s/opt/venv /opt/venv" % q(self.image),
            "chmod -R u+w /opt/venv",
            "report=",
        ]
        for m in mounts:
            dest = q(m["dest"])
            lines += [
                "mkdir -p \"$(dirname %s)\"" % dest,
                "if [ -d %s ]; then mkdir -p %s; else touch %s; fi" % (q(m["host"]), dest, dest),
                "mount --bind %s %s" % (q(m["host"]), dest),
            ]
            if m["ro"]:
                lines.append("mount -o remount,bind,ro %s" % dest)
            lines.append(
                "if findmnt -n -o OPTIONS --target %s | grep -qE '(^|,)ro(,|$)'; then ro=true; else ro=false; fi" % dest
            )
            lines.append('report="${report:+$report, }\\"%s\\": $ro"' % m["dest"])
        # NixOS has no /bin/bash, which images have and cmd strings name.
        # (Where the host has one, its /bin stays: on a merged /usr a tmpfs
        # there would hide /usr/bin.)
        lines += [
            "if [ ! -e /bin/bash ]; then",
            '  bash=$(command -v bash)',
            "  mount -t tmpfs standin-bin /bin",
            '  ln -s "$bash" /bin/bash',
            '  ln -s "$bash" /bin/sh',
            "fi",
            'echo "{$report}" >&"$STANDIN_REPORT_FD"',
            'eval "exec $STANDIN_REPORT_FD>&-"',
            "unset STANDIN_TOOLS STANDIN_REPORT_FD",
            'PATH=$container_path exec "$@"',
        ]
        return "\n".join(lines)


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def daemon_main(args):
    opts = dict(zip(args[::2], args[1::2]))
    need = ["--socket", "--group", "--image", "--log"]
    if len(args) % 2 or any(k not in opts for k in need):
        sys.exit("usage: docker-standin daemon --socket PATH --group GROUP --image DIR --log FILE")
    import grp
    group = opts["--group"]
    gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    path = opts["--socket"]
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chown(path, 0, gid)
    os.chmod(path, 0o660)
    srv.listen(16)
    d = Daemon({"image": opts["--image"], "log": opts["--log"]})
    signal.signal(signal.SIGTERM, d.stop_all)
    print("docker-standin: listening on %s (root:%s 0660)" % (path, opts["--group"]), flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=d.serve, args=(conn,), daemon=True).start()


def client_main(argv):
    host = os.environ.get("DOCKER_HOST", "unix:///run/docker.sock")
    if not host.startswith("unix://"):
        sys.exit("docker-standin: DOCKER_HOST must be unix://PATH")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(host[len("unix://"):])
    except OSError as e:
        # dockerd's client says the same on a socket it may not open.
        sys.stderr.write("docker: permission denied while trying to connect to the Docker daemon socket at %s: %s\n" % (host, e))
        sys.exit(126 if isinstance(e, PermissionError) else 1)
    req = json.dumps({"argv": argv, "env": dict(os.environ)}).encode() + b"\n"
    s.sendmsg([req], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    # SIGTERM (llama-swap stopping the model) closes the connection, and the
    # daemon ends the container.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    data = b""
    while True:
        chunk = s.recv(64)
        if not chunk:
            break
        data += chunk
    sys.exit(int(data.strip() or b"1"))


VLLM = """#!/bin/bash
# The image's vllm: `vllm serve ...` starts the fake OpenAI server on
# $VLLM_STANDIN_PORT with the timings module that vllm-timings apply wrote
# into the vLLM tree. Without it (nothing patched), the server cannot start.
site=$(echo /opt/venv/lib/python3*/site-packages)
exec python3 %(server)s --module "$site/vllm/_llamacpp_timings.py" --port "${VLLM_STANDIN_PORT:?no -p}"
"""


def unpack_txtar(path, out):
    """Writes a fixture tree (testtree's txtar format, "base: OTHER" lines
    in the comment naming fixtures it is written over) into out."""
    with open(path) as f:
        text = f.read()
    comment, files, name, body = [], [], None, []
    for line in text.splitlines(keepends=True):
        if line.startswith("-- ") and line.rstrip("\n").endswith(" --") and len(line.strip()) > 6:
            if name is not None:
                files.append((name, "".join(body)))
            name, body = line.strip()[3:-3].strip(), []
        elif name is None:
            comment.append(line)
        else:
            body.append(line)
    if name is not None:
        files.append((name, "".join(body)))
    for line in comment:
        if line.startswith("base: "):
            unpack_txtar(os.path.join(os.path.dirname(path), line[6:].strip() + ".txtar"), out)
    for name, content in files:
        dest = os.path.join(out, name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w") as f:
            f.write(content)


def image_main(args):
    """image TXTAR FAKE_SERVER OUT: the image directory the daemon runs."""
    if len(args) != 3:
        sys.exit("usage: docker-standin image FIXTURE.txtar FAKE_SERVER.py OUT")
    fixture, server, out = args
    site = os.path.join(out, "opt", "venv", "lib", "python3.12", "site-packages")
    os.makedirs(site)
    unpack_txtar(fixture, site)
    os.makedirs(os.path.join(out, "bin"))
    shutil.copy(server, os.path.join(out, "fake-openai-server.py"))
    with open(os.path.join(out, "bin", "vllm"), "w") as f:
        f.write(VLLM % {"server": os.path.join(out, "fake-openai-server.py")})
    os.chmod(os.path.join(out, "bin", "vllm"), 0o755)
    os.symlink(sys.executable, os.path.join(out, "bin", "python3"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["daemon"]:
        daemon_main(sys.argv[2:])
    elif sys.argv[1:2] == ["image"]:
        image_main(sys.argv[2:])
    else:
        client_main(sys.argv[1:])
