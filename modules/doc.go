// Package modules holds no code: it is the home of the Go tests for the Nix
// side of the project, the flake (flake.nix, with modules/package.nix,
// modules/checks.nix and modules/vllm.nix) and the NixOS module
// (modules/nixos), so that `go test ./...` checks them too. Users import
// package.nix, vllm.nix and nixos/; tests/ holds what the tests and the
// flake's checks evaluate (eval.nix, the VM test and its Docker stand-in).
//
// What runs, with nix-instantiate (Debian's nix-bin is enough) and nixpkgs'
// lib from VLLM_TIMINGS_NIXPKGS_LIB or ../shared/nixpkgs-lib (nixgen/nixtest;
// with CI=true a missing tool or lib is a failure, elsewhere a skip):
//   - every .nix file in the repository must pass `nix-instantiate --parse`;
//   - the module is evaluated with lib.evalModules by
//     modules/tests/eval.nix, every check in it must be true, and the
//     result must equal modules/tests/expected.json (-update rewrites
//     it);
//   - the module's strings and mkModel entries are compared with what the
//     built binary's `nix fragments` and `nix model` print for the same input;
//   - the README's configuration (eval.nix's sample) and the VM test's node
//     (tests/vm-node.nix) are evaluated beside nixpkgs' own
//     services.llama-swap module (../shared/nixpkgs-llama-swap), with
//     stand-ins for the NixOS options it sets (tests/nixpkgs-llama-swap.nix):
//     the unit, its config.yaml and the warnings;
//   - as root, the VM test's Docker stand-in (tests/docker-standin.py)
//     serves the real llama-swap, run as nobody with the socket's group, and
//     a request through it returns timings.
//
// scripts/nix-build-here (run by .ci/run, not by go test) builds
// package.nix under real Nix, in its sandbox, with scripts/nix-build-here.d:
// nixpkgs' lib, a buildGoModule written to nixpkgs' semantics and each nixpkgs
// package mapped to this machine's programs.
//
// The flake's own checks (`nix flake check`) run the same eval.nix and
// expected.json, build the package with nixpkgs' buildGoModule, and run the
// NixOS VM test (tests/vm.nix); they need nixpkgs, and the VM test
// KVM.
package modules
