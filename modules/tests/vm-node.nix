# The machine of the VM test (./vm.nix): nixpkgs' services.llama-swap with
# this module, one vLLM model, and ./docker-standin.py in Docker's place:
# a root daemon on /run/docker.sock, root:docker 0660, that records each
# caller and argv in /var/log/docker-standin.jsonl and runs the "container"
# (the fixture vLLM tree, patched by the mounted vllm-timings, behind
# scripts/fake-openai-server.py, which answers as vLLM does).
#
# ./nixpkgs-llama-swap.nix evaluates this node with lib.evalModules where
# there is no nixpkgs (the Go test in ./modules); the VM test needs
# nixpkgs and KVM.
{
  config,
  lib,
  pkgs,
  ...
}:
let
  python = pkgs.python3.interpreter;
  # The client, installed as `docker`.
  docker = pkgs.runCommand "docker-standin" { } ''
    mkdir -p $out/bin
    { echo "#!${python}"; tail -n +2 ${./docker-standin.py}; } > $out/bin/docker
    chmod +x $out/bin/docker
  '';
  # The "image": the fixture tree where vLLM images keep vLLM
  # (/opt/venv/lib/python3.12/site-packages), a `vllm` that starts the fake
  # server with the module the patcher writes, and python3.
  image = pkgs.runCommand "vllm-standin-image" { } ''
    ${python} ${./docker-standin.py} image \
      ${../../patcher/testdata/trees}/openai-packages.txtar \
      ${../../scripts/fake-openai-server.py} $out
  '';
  t = config.services.llama-swap.vllmTimings;
in
{
  services.llama-swap = {
    enable = true;
    port = 8080;
    vllmTimings = {
      enable = true;
      dockerGroup = "docker";
    };
    settings = {
      healthCheckTimeout = 60;
      models.vllm = t.mkModel {
        image = "standin/vllm";
        docker = "${docker}/bin/docker";
        # The binary must be read-only in the container: root there could
        # write through a writable mount into the store.
        before = [
          "if touch ${t.mountPath} 2>/dev/null; then echo 'vllm-timings is writable in the container' >&2; exit 1; fi"
        ];
        serveArgs = [
          "--served-model-name"
          "\${MODEL_ID}"
          "--host"
          "0.0.0.0"
          "--port"
          "8000"
        ];
      };
    };
  };

  # What virtualisation.docker.enable declares.
  users.groups.docker = { };

  systemd.services.docker-standin = {
    description = "A stand-in for dockerd (vllm-timings' VM test)";
    wantedBy = [ "multi-user.target" ];
    before = [ "llama-swap.service" ];
    # What it mounts and copies with, and the containers' base system.
    path = [
      pkgs.util-linux
      pkgs.coreutils
      pkgs.gnugrep
      pkgs.bash
    ];
    serviceConfig.ExecStart = "${python} ${./docker-standin.py} daemon --socket /run/docker.sock --group docker --image ${image} --log /var/log/docker-standin.jsonl";
  };
  systemd.services.llama-swap = {
    after = [ "docker-standin.service" ];
    requires = [ "docker-standin.service" ];
  };

  environment.systemPackages = [ pkgs.curl ];
}
