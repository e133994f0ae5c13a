// Package modules holds no code: it is the home of the Go tests for the Nix
// side of the project, the flake (flake.nix, with modules/package.nix and
// modules/checks.nix) and the NixOS module (modules/nixos), so that
// `go test ./...` checks them too.
//
// Three levels, from always to when the tools are there:
//   - every .nix file in the repository must pass `nix-instantiate --parse`
//     (Debian's nix-bin is enough; with CI=true a missing nix-instantiate is a
//     failure, elsewhere the test skips);
//   - with VLLM_TIMINGS_NIXPKGS_LIB pointing at a nixpkgs or
//     nix-community/nixpkgs.lib checkout, the module is evaluated with
//     lib.evalModules by modules/nixos/tests/eval.nix and compared with
//     modules/nixos/tests/expected.json (-update rewrites it);
//   - with the same variable, when the binary has the `nix fragments`
//     command, the module's strings are compared with the command's JSON.
//
// The flake's own checks (`nix flake check`) run the same eval.nix and
// expected.json, and also build the package; they need a full nixpkgs.
package modules
