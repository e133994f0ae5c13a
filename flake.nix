{
  description = "vllm-timings: llama.cpp-style timings in vLLM's OpenAI responses, for llama-swap";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      # { x86_64-linux = f pkgs; aarch64-linux = f pkgs; }, with that system's pkgs.
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      packageFor = pkgs: self.packages.${pkgs.stdenv.hostPlatform.system}.vllm-timings;
    in
    {
      packages = forAllSystems (pkgs: {
        default = packageFor pkgs;
        vllm-timings = pkgs.callPackage ./modules/package.nix { };
        # The binary alone, as /vllm-timings (as the Containerfile builds it):
        # nix build .#image && docker load < result
        image = pkgs.callPackage ./modules/image.nix { vllm-timings = packageFor pkgs; };
      });

      # nix run . -- apply --vllm-dir DIR
      apps = forAllSystems (pkgs: {
        default = {
          type = "app";
          program = lib.getExe (packageFor pkgs);
          meta.description = "Patch an installed vLLM so that its responses carry timings";
        };
      });

      overlays.default = final: _prev: {
        vllm-timings = final.callPackage ./modules/package.nix { };
      };

      # For configurations that do not use the NixOS module, e.g. a llama-swap
      # config.nix of one's own:
      #   vt = vllm-timings.lib.fragments { binary = lib.getExe vllm-timings.packages.${system}.default; };
      #   models.qwen = vt.mkModel { image = "..."; serveArgs = [ ... (vt.raw "...") ]; };
      # The arguments and results are listed at the top of the file.
      lib.fragments = import ./modules/nixos/fragments.nix;

      # nixpkgs' vllm patched at build time (see modules/vllm.nix):
      #   vllm-timings.lib.patchVllm { vllm = pkgs.python3Packages.vllm; vllm-timings = ...; }
      lib.patchVllm = import ./modules/vllm.nix { inherit lib; };

      # Every python3Packages.vllm (and so pkgs.vllm) patched at build time,
      # with the vllm-timings that overlays.default adds, or this flake's.
      overlays.vllm = final: prev: {
        pythonPackagesExtensions = (prev.pythonPackagesExtensions or [ ]) ++ [
          (_pyfinal: pyprev: {
            vllm = self.lib.patchVllm {
              inherit (pyprev) vllm;
              # It runs in the build, so it is built for the build machine.
              vllm-timings =
                final.buildPackages.vllm-timings or (final.buildPackages.callPackage ./modules/package.nix { });
            };
          })
        ];
      };

      # An attribute set, not a path, so that older Nix accepts it too.
      nixosModules.default = import ./modules/nixos;

      checks = forAllSystems (
        pkgs:
        import ./modules/checks.nix {
          inherit pkgs nixpkgs;
          package = packageFor pkgs;
          image = self.packages.${pkgs.stdenv.hostPlatform.system}.image;
          module = self.nixosModules.default;
        }
      );

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = [
            (packageFor pkgs).go
            pkgs.gopls
            pkgs.python3
            pkgs.python3Packages.pyflakes
            pkgs.nix
            pkgs.nixfmt
            pkgs.jq
          ];
        };
      });

      # nixfmt over the whole tree: `nix fmt` no longer passes `.` to the
      # formatter, and nixfmt alone would then read standard input. Generated
      # Nix under testdata/ stays exactly as generated.
      formatter = forAllSystems (
        pkgs: pkgs.nixfmt-tree.override { settings.formatter.nixfmt.excludes = [ "*/testdata/*" ]; }
      );
    };
}
