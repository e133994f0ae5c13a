"""image-contents.py ARCHIVE WANT.json: does an image hold what WANT says?

ARCHIVE is an image as `docker save` / `podman save --format docker-archive`
write it, or as nixpkgs' dockerTools.buildImage builds it (the same layout,
gzipped): manifest.json, the config it names, the layers' tars. Every entry
of every layer is listed (the root directory itself aside) with its type,
mode, owner and group, and must be exactly WANT's "files"; the config's
Entrypoint, Env and Labels must be WANT's, and it must set no Cmd, User or
WorkingDir (the image runs /vllm-timings as the caller says, as root unless
the pod says otherwise). podman adds a label io.buildah.version unless
built with --identity-label=false.

Used by the flake check image-contents (packages.image, where nixpkgs is)
and by scripts/real-vllm --level kube (the Containerfile, with podman).
Prints what it found; exit 0 if it matches, 1 if not.
"""

import json
import sys
import tarfile


def entries(layer):
    out = []
    for m in layer.getmembers():
        name = m.name
        while name.startswith("./"):
            name = name[2:]
        name = name.strip("/")
        if name in ("", "."):
            continue
        kind = "dir" if m.isdir() else "symlink" if m.issym() else "file" if m.isfile() else "other"
        e = {"path": name, "type": kind, "mode": f"{m.mode & 0o7777:04o}", "uid": m.uid, "gid": m.gid}
        if m.issym():
            e["target"] = m.linkname
        out.append(e)
    return out


def main(archive, want_path):
    want = json.load(open(want_path))
    with tarfile.open(archive, "r:*") as image:
        manifest = json.load(image.extractfile("manifest.json"))
        if len(manifest) != 1:
            sys.exit(f"{archive}: {len(manifest)} images in manifest.json, want 1")
        config = json.load(image.extractfile(manifest[0]["Config"]))
        files = []
        for name in manifest[0]["Layers"]:
            with tarfile.open(fileobj=image.extractfile(name), mode="r:*") as layer:
                files += entries(layer)
    files.sort(key=lambda e: e["path"])
    c = config.get("config") or {}
    print(f"{archive}: {config.get('os')}/{config.get('architecture')}, {len(manifest[0]['Layers'])} layer(s)")
    for e in files:
        print(f"  {e['type']} /{e['path']} mode {e['mode']} uid {e['uid']} gid {e['gid']}")
    print(f"  Entrypoint {json.dumps(c.get('Entrypoint'))}, Env {json.dumps(c.get('Env'))}")
    problems = []
    if files != want["files"]:
        problems.append(f"files: got {json.dumps(files)}, want {json.dumps(want['files'])}")
    for key in ("Entrypoint", "Env", "Labels"):
        if c.get(key) != want["config"][key]:
            problems.append(f"config.{key}: got {json.dumps(c.get(key))}, want {json.dumps(want['config'][key])}")
    for key in ("Cmd", "User", "WorkingDir"):
        if c.get(key):
            problems.append(f"config.{key} is {json.dumps(c[key])}, want none")
    if config.get("os") != "linux":
        problems.append(f"os is {config.get('os')}, want linux")
    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        return 1
    print(f"ok: the image holds what {want_path} says")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
