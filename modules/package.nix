# The vllm-timings package, for callPackage. The flake's packages, its overlay
# and the NixOS module's default `package` all come from this file, so they are
# one derivation.
{
  lib,
  buildGoModule,
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
        ../flake.nix
        (lib.fileset.maybeMissing ../flake.lock)
      ]
    );
  };

  # The NAR hash of `go mod vendor`'s output. Print it with scripts/vendor-hash;
  # `scripts/vendor-hash -w` rewrites this line, and a Go test fails when it is
  # stale.
  vendorHash = "sha256-eB2wWJSIyue0qULyeU9mzWbNnyuslCIRO2gVytTI4ys=";

  subPackages = [ "cmd/vllm-timings" ];

  # A static binary, to be mounted into any Linux container.
  env.CGO_ENABLED = 0;

  ldflags = [
    "-s"
    "-w"
    "-X main.version=${version}"
  ];

  # subPackages also narrows buildGoModule's default checkPhase to those
  # packages; run the tests of every package instead. Tests that need python3,
  # nix-instantiate or the network skip themselves in the sandbox.
  checkPhase = ''
    runHook preCheck
    export GOFLAGS=''${GOFLAGS//-trimpath/}
    go test -p "$NIX_BUILD_CORES" -vet=off ./...
    runHook postCheck
  '';

  meta = {
    description = "Adds llama.cpp-style timings to vLLM's OpenAI-compatible responses, for llama-swap";
    license = lib.licenses.mit;
    mainProgram = "vllm-timings";
    platforms = lib.platforms.linux;
  };
}
