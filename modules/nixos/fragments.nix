# STAND-IN for nixgen's modules/nixos/fragments.nix (branch `nixgen`), with
# the agreed interface, so that the NixOS module and its checks can be written
# before that file lands. When merging, take nixgen's file, not this one, and
# regenerate modules/nixos/tests/expected.json.
{
  binary,
  mountPath ? "/patches/vllm-timings",
  onFailure ? "warn",
  patchsets ? [ ],
}:
let
  # The stand-in refuses every word that would need shell quoting.
  word =
    s:
    if builtins.match "[A-Za-z0-9_@%+=:,./-]+" s != null then
      s
    else
      throw "fragments.nix (stand-in): cannot quote `${s}`";
  indices = builtins.genList (i: i) (builtins.length patchsets);
  patchsetMount = i: "${mountPath}.d/${toString i}.hcl";
  mounts = [
    "-v"
    "${word binary}:${word mountPath}:ro"
  ]
  ++ builtins.concatMap (i: [
    "-v"
    "${word "${builtins.elemAt patchsets i}"}:${patchsetMount i}:ro"
  ]) indices;
  apply = [
    mountPath
    "apply"
    "--on-failure"
    onFailure
  ]
  ++ builtins.concatMap (i: [
    "--patchset"
    (patchsetMount i)
  ]) indices;
  cmdPrefix = builtins.concatStringsSep " " (map word apply) + ";";
in
{
  dockerArgs = builtins.concatStringsSep " " mounts;
  inherit cmdPrefix;
  mkCmd =
    {
      image,
      serveArgs ? [ ],
      dockerArgs ? [ ],
      docker ? "docker",
    }:
    builtins.concatStringsSep " " (
      [
        docker
        "run"
        "--rm"
        "--name"
        "\${MODEL_ID}"
        "-p"
        "\${PORT}:8000"
      ]
      ++ mounts
      ++ dockerArgs
      ++ [
        "--entrypoint"
        "/bin/bash"
        image
        "-c"
        "\"set -e; ${cmdPrefix} exec vllm serve ${builtins.concatStringsSep " " serveArgs} --host 0.0.0.0 --port 8000\""
      ]
    );
}
