# The vllm-timings package, for callPackage. The flake's packages, its overlay
# and the NixOS module's default `package` all come from this file, so they are
# one derivation.
{
  lib,
  buildGoModule,
  gitMinimal,
  python3,
  util-linux,
}:
let
  version = "0.1.0";
in
buildGoModule {
  pname = "vllm-timings";
  inherit version;

  # The repository without the flake's own files, so that editing those does
  # not rebuild the binary. The Go tests read README.md and the rest of
  # modules/, so they stay in.
  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.difference ../. (
      lib.fileset.unions [
        ./package.nix
        ./checks.nix
        ./image.nix
        ../flake.nix
        (lib.fileset.maybeMissing ../flake.lock)
      ]
    );
  };

  # The NAR hash of `go mod vendor`'s output. Print it with scripts/vendor-hash;
  # `scripts/vendor-hash -w` rewrites this line, and a Go test fails when it is
  # stale.
  vendorHash = "sha256-kmOTfjD2d6BZuCFPXsApWvMZQmfR0mkOmrbqkfETdh0=";

  subPackages = [ "cmd/vllm-timings" ];

  # A static binary, to be mounted into any Linux container.
  env.CGO_ENABLED = 0;

  ldflags = [
    "-s"
    "-w"
    "-X main.version=${version}"
  ];

  # The Go tests of every package run at build time, in Nix's sandbox (no
  # network, HOME=/homeless-shelter, a build user), with the programs they
  # run. Tests that need what the sandbox cannot have (nix-instantiate,
  # strace, root, llama-swap's source beside the repository) skip there;
  # CI runs them. scripts/nix-build-here runs this check phase under real
  # Nix without nixpkgs.
  nativeCheckInputs = [
    gitMinimal # diff.txtar applies `diff`'s patch with git apply
    util-linux # lock.txtar runs flock, overlay.txtar unshare
    # python3 for the patcher's compile check and the fixture's serving
    # code, which imports pydantic as vLLM's does; pyflakes finds nothing
    # new in patched files.
    (python3.withPackages (ps: [
      ps.pydantic
      ps.pyflakes
    ]))
  ];

  # subPackages also narrows buildGoModule's checkPhase to those packages;
  # test them all.
  preCheck = ''
    unset subPackages
  '';

  # The README's Quick start `go run`s txtar-x, a module outside vendor/, and
  # the build has -mod=vendor and no network.
  checkFlags = [ "-skip=^TestReadmeQuickStart$" ];

  meta = {
    description = "Adds llama.cpp-style timings to vLLM's OpenAI-compatible responses, for llama-swap";
    license = lib.licenses.mit;
    mainProgram = "vllm-timings";
    platforms = lib.platforms.linux;
  };
}
