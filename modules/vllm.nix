# nixpkgs' vllm, patched at build time so that its responses carry timings.
#
# nixpkgs' vllm lives in the read-only /nix/store, so `vllm-timings apply`
# cannot patch it where it runs. This adds the patch to the derivation
# itself: an overridePythonAttrs whose postInstall runs
#
#   vllm-timings apply --on-failure abort --vllm-dir $out/<site-packages>/vllm
#
# on the freshly installed package, before the fixup phase. A vLLM that no
# patch set fits fails the build with the patcher's message, instead of
# giving a vllm without timings.
#
# Interface (the flake's lib.patchVllm; overlays.vllm applies it to every
# python3Packages.vllm, and so to pkgs.vllm):
#
#   patchVllm {
#     vllm;              # a Python package derivation, e.g. pkgs.python3Packages.vllm
#     vllm-timings;      # the vllm-timings package; it runs in the build
#     patchsets ? [ ];   # extra patch set files (paths), given to apply --patchset
#   }
#   => vllm, rebuilt with the patch; passthru.vllmTimings = true.
#
# The override changes vLLM's derivation, so the binary cache does not have
# it: the first build compiles vLLM from source.
{ lib }:
{
  vllm,
  vllm-timings,
  patchsets ? [ ],
}:
let
  inherit (vllm.pythonModule) sitePackages;
  apply = lib.escapeShellArgs (
    [
      (lib.getExe vllm-timings)
      "apply"
      "--on-failure"
      "abort"
    ]
    ++ lib.concatMap (p: [
      "--patchset"
      "${p}"
    ]) patchsets
  );
in
# A Python application (toPythonApplication) has pythonModule = false.
if !(vllm ? overridePythonAttrs) || (vllm.pythonModule or false) == false then
  throw "vllm-timings patchVllm: vllm is not a Python package (no overridePythonAttrs, or pythonModule is false); pass the package pkgs.python3Packages.vllm rather than the application pkgs.vllm."
else
vllm.overridePythonAttrs (old: {
  postInstall = (old.postInstall or "") + ''
    # vllm-timings: llama.cpp-style timings in vLLM's OpenAI responses
    ${apply} --vllm-dir "$out/${sitePackages}/vllm"
  '';
  passthru = (old.passthru or { }) // {
    vllmTimings = true;
  };
})
