#!/usr/bin/env python3
"""pod-edit.py: docs/kubernetes.md's blocks (on stdin), changed only where this
machine differs from a cluster, for scripts/real-vllm.d/kube-level.

  pod-edit.py pod VT_IMAGE VLLM_IMAGE MODEL PORT   a pod's YAML
  pod-edit.py dockerfile VT_IMAGE VLLM_IMAGE       the COPY --from Dockerfile
  pod-edit.py peers PORT MODEL                     llama-swap's peers block
  pod-edit.py volumes                              a pod's emptyDir volumes, one a line

pod: the images become the local ones; Qwen/Qwen3-8B (served as qwen3-8b)
becomes the container level's tiny model (served as MODEL) with the flags
the CPU needs for it; the GPU limit goes; containerPort 8000 gets a host
port on 127.0.0.1; and restartPolicy is OnFailure, not the default Always:
podman 4.3 applies a pod's Always to its init containers too, restarting
one that exited 0 until it removes it, and then at times fails `kube play`
("failed to remove once init container ... as it is running";
containers/podman#16343, #18477, fixed in later podman). A cluster runs an
init container once whatever the policy. Every edit must find exactly what it changes, or this
fails: the page and the level cannot drift apart silently.
"""

import re
import sys

# The flags the container level serves its tiny model with, on the CPU.
TINY = ["--dtype", "float32", "--max-model-len", "1024", "--max-num-seqs", "4", "--enforce-eager", "-O0",
        "--enable-prefix-caching", "--enable-prompt-tokens-details"]


def sub(text, pattern, repl, what):
    new, n = re.subn(pattern, repl, text, flags=re.M)
    if n != 1:
        sys.exit(f"pod-edit.py: {what}: found {n} times in the page's block, want once")
    return new


def pod(text, vt_image, vllm_image, model, port):
    text = sub(text, r"^(\s+image: )ghcr\.io/vllm-timings/vllm-timings:\S+$", rf"\g<1>{vt_image}", "the vllm-timings image")
    text = sub(text, r"^(\s+image: )vllm/vllm-openai:\S+$", rf"\g<1>{vllm_image}", "the vLLM image")
    tiny = "".join(f', "{a}"' for a in TINY)
    text = sub(text, r'^(\s+args: \[)"Qwen/Qwen3-8B", "--served-model-name", "qwen3-8b", (.*)\]$',
               rf'\g<1>"/models/tiny", "--served-model-name", "{model}", \g<2>{tiny}]', "vllm serve's args")
    text = sub(text, r"^spec:\n", "spec:\n  restartPolicy: OnFailure\n", "the pod's spec")
    text = sub(text, r"^\s+resources:\n\s+limits:\n\s+nvidia\.com/gpu: 1\n", "", "the GPU limit")
    text = sub(text, r"^(\s+)- containerPort: 8000\n", rf"\g<1>- containerPort: 8000\n\g<1>  hostPort: {port}\n\g<1>  hostIP: 127.0.0.1\n",
               "containerPort 8000")
    return text


def dockerfile(text, vt_image, vllm_image):
    text = sub(text, r"^FROM vllm/vllm-openai:\S+$", f"FROM {vllm_image}", "FROM the vLLM image")
    text = sub(text, r"--from=ghcr\.io/vllm-timings/vllm-timings:\S+ ", f"--from={vt_image} ", "COPY --from the vllm-timings image")
    return text


def peers(text, port, model):
    text = sub(text, r"proxy: http://qwen3-8b\.default\.svc:8000$", f"proxy: http://127.0.0.1:{port}", "the peer's proxy URL")
    text = sub(text, r"^(\s+)- qwen3-8b$", rf"\g<1>- {model}", "the peer's model")
    return text


def volumes(text):
    """The names of the emptyDir volumes under the pod's volumes:."""
    spec = text.split("\n  volumes:\n", 1)
    if len(spec) != 2:
        sys.exit("pod-edit.py: the pod has no volumes")
    names = re.findall(r"^    - name: (\S+)\n      emptyDir:", spec[1], flags=re.M)
    if not names:
        sys.exit("pod-edit.py: the pod has no emptyDir volume")
    return "".join(n + "\n" for n in names)


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        sys.exit(0)
    text = sys.stdin.read()
    if not text.endswith("\n"):
        text += "\n"
    match argv:
        case ["pod", vt, vllm, model, port]:
            out = pod(text, vt, vllm, model, port)
        case ["dockerfile", vt, vllm]:
            out = dockerfile(text, vt, vllm)
        case ["peers", port, model]:
            out = peers(text, port, model)
        case ["volumes"]:
            out = volumes(text)
        case _:
            sys.exit(__doc__)
    sys.stdout.write(out)


if __name__ == "__main__":
    main(sys.argv[1:])
