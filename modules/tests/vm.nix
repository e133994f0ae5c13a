# The NixOS VM test, a flake check (`nix flake check` runs it; it needs
# nixpkgs and KVM, e.g. the GitHub workflow's runner): nixpkgs' own
# services.llama-swap, with DynamicUser and PrivateUsers, and this module,
# on the machine of ./vm-node.nix. It checks that
#   - a chat request through llama-swap returns `timings`, from the module
#     that the mounted vllm-timings wrote into the fixture vLLM tree;
#   - the llama-swap unit reached the root:docker 0660 socket through the
#     group dockerGroup added: the daemon saw a caller that is not root and
#     has the docker group;
#   - the `docker run` argv holds the read-only mount of the package's
#     binary and the patcher's statement (cmdPrefix);
#   - the binary was read-only in the container.
{
  pkgs,
  module,
  package,
}:
pkgs.testers.runNixOSTest {
  name = "vllm-timings-llama-swap";
  nodes.machine = {
    imports = [
      module
      ./vm-node.nix
    ];
    services.llama-swap.vllmTimings.package = package;
  };
  testScript =
    { nodes, ... }:
    let
      t = nodes.machine.services.llama-swap.vllmTimings;
      mount = "${pkgs.lib.getExe package}:${t.mountPath}:ro";
    in
    ''
      import json

      machine.wait_for_unit("docker-standin.service")
      machine.wait_for_unit("llama-swap.service")
      machine.wait_for_open_port(8080)

      with subtest("the llama-swap unit runs as a dynamic user in a user namespace"):
          shown = machine.succeed("systemctl show llama-swap -p DynamicUser -p PrivateUsers")
          assert "DynamicUser=yes" in shown and "PrivateUsers=yes" in shown, shown

      with subtest("a request through llama-swap returns timings"):
          out = machine.succeed(
              "curl -sf --max-time 120 http://127.0.0.1:8080/v1/chat/completions"
              " -H 'Content-Type: application/json'"
              " -d '{\"model\": \"vllm\", \"messages\": [{\"role\": \"user\", \"content\": \"hello there\"}]}'"
          )
          body = json.loads(out)
          timings = body.get("timings")
          assert timings and timings["predicted_n"] > 0 and timings["prompt_n"] > 0, out

      calls = [json.loads(line) for line in machine.succeed("cat /var/log/docker-standin.jsonl").splitlines()]
      runs = [c for c in calls if c["argv"][:1] == ["run"]]
      assert runs, calls
      run = runs[0]

      with subtest("llama-swap reached the root:docker 0660 socket through the group"):
          gid = int(machine.succeed("getent group docker | cut -d: -f3"))
          caller = run["caller"]
          assert caller["uid"] != 0 and gid in caller["groups"], caller

      with subtest("docker run mounts the package's binary read-only and runs the patcher"):
          argv = run["argv"]
          assert ${builtins.toJSON mount} in argv, argv
          assert ${builtins.toJSON t.cmdPrefix} in argv[-1], argv

      with subtest("the binary is read-only in the container"):
          assert run["readonly"] == {${builtins.toJSON t.mountPath}: True}, run
    '';
}
