# The vllm-timings image with nixpkgs' dockerTools, for callPackage: the
# static binary alone, as /vllm-timings, the image the Containerfile
# builds. image-contents.json is what both hold (its files and config);
# the flake's packages.image is this, and checks.image-contents compares
# the built image with that file.
{
  lib,
  dockerTools,
  vllm-timings,
}:
let
  contents = lib.importJSON ./image-contents.json;
in
dockerTools.buildImage {
  name = "vllm-timings";
  tag = vllm-timings.version;
  # The one file, copied out of the store into the layer (not a link into
  # /nix/store, which the image does not have): the static binary refers
  # to no store path, so nothing else comes with it. Nix's copy is
  # read-only; the image's is 0755, as COPY --chmod=0755 makes it.
  extraCommands = ''
    cp ${lib.getExe vllm-timings} vllm-timings
    chmod 0755 vllm-timings
  '';
  config = {
    inherit (contents.config) Entrypoint Env Labels;
  };
}
