# The flake's checks for one system. Each one says in its failure output what
# to run to fix it.
{
  pkgs,
  nixpkgs,
  package,
  image,
  module,
}:
let
  inherit (nixpkgs) lib;
  exe = lib.getExe package;
  moduleTests = ./tests;
  updateHint = "VLLM_TIMINGS_NIXPKGS_LIB=<a nixpkgs checkout> go test ./modules -run TestModuleEval -update";
in
{
  # The build runs every Go package's tests in its checkPhase.
  inherit package;

  # CGO_ENABLED=0 must give a binary with no interpreter and no dynamic
  # section, or it will not run in every container; -X must set the version.
  static =
    pkgs.runCommand "vllm-timings-static-check" { nativeBuildInputs = [ pkgs.binutils-unwrapped ]; }
      ''
        bin=${exe}
        readelf --program-headers --wide "$bin" > headers.txt
        if grep -q INTERP headers.txt; then
          echo "$bin has a program interpreter, so it is dynamically linked; build it with CGO_ENABLED=0" >&2
          exit 1
        fi
        readelf --dynamic "$bin" | tee dynamic.txt
        grep -q 'There is no dynamic section' dynamic.txt
        "$bin" --version | tee version.txt
        grep -qF 'version ${package.version}' version.txt
        touch $out
      '';

  # packages.image, built by dockerTools, holds what the Containerfile's
  # image holds (image-contents.json: one file, /vllm-timings, mode 0755,
  # root's; the entrypoint and labels). scripts/real-vllm --level kube
  # compares the Containerfile's image, built by podman, with the same file.
  image-contents =
    pkgs.runCommand "vllm-timings-image-contents" { nativeBuildInputs = [ pkgs.python3 ]; }
      ''
        python3 ${./tests/image-contents.py} ${image} ${./image-contents.json}
        touch $out
      '';

  # The module evaluated by lib.evalModules with a sample llama-swap
  # configuration: every string must be exactly the one in expected.json.
  module-eval =
    pkgs.runCommand "vllm-timings-module-eval"
      {
        nativeBuildInputs = [ pkgs.jq ];
        actual = builtins.toJSON (import (moduleTests + "/eval.nix") { inherit lib; });
        passAsFile = [ "actual" ];
      }
      ''
        jq -S . "$actualPath" > actual.json
        jq -S . ${moduleTests + "/expected.json"} > expected.json
        if ! diff -u expected.json actual.json; then
          echo "The module's strings differ from modules/tests/expected.json (- expected, + actual)." >&2
          echo "If the change is intended, update it: ${updateHint}" >&2
          exit 1
        fi
        touch $out
      '';

  # One source of truth: for each option set, the module's dockerArgs and
  # cmdPrefix must equal what `vllm-timings nix fragments --format json`
  # prints for the same binary, mount path, failure mode and patch sets.
  fragments-match-go =
    let
      cases =
        (import (moduleTests + "/eval.nix") {
          inherit lib package;
          patchsets = [
            (pkgs.writeText "first.hcl" "# an empty patch set\n")
            (pkgs.writeText "second.hcl" "# an empty patch set\n")
          ];
        }).fragments;
      flagsOf =
        o:
        [
          "--binary"
          exe
        ]
        ++ lib.optionals (o ? mountPath) [
          "--mount"
          o.mountPath
        ]
        ++ lib.optionals (o ? onFailure) [
          "--on-failure"
          o.onFailure
        ]
        ++ lib.concatMap (p: [
          "--patchset"
          "${p}"
        ]) (o.patchsets or [ ]);
      compare = name: c: ''
        echo "case ${name}"
        ${exe} nix fragments ${lib.escapeShellArgs (flagsOf c.options)} --format json > go.json
        jq -S '{dockerArgs, cmdPrefix}' go.json > go.norm
        printf '%s' ${
          lib.escapeShellArg (builtins.toJSON { inherit (c) dockerArgs cmdPrefix; })
        } | jq -S . > module.norm
        if ! diff -u module.norm go.norm; then
          echo "case ${name}: the module (-) and vllm-timings nix fragments (+) disagree;" >&2
          echo "modules/nixos/fragments.nix and the nixgen package must change together." >&2
          exit 1
        fi
      '';
    in
    pkgs.runCommand "vllm-timings-fragments-match-go" { nativeBuildInputs = [ pkgs.jq ]; } ''
      ${lib.concatStrings (lib.mapAttrsToList compare cases)}
      touch $out
    '';

  # The module inside a real NixOS evaluation, next to nixpkgs' own
  # llama-swap module: the options merge, the default package is this flake's,
  # and dockerGroup reaches the service.
  nixos-module =
    let
      system = pkgs.stdenv.hostPlatform.system;
      nixos = lib.nixosSystem {
        modules = [
          module
          (
            { config, ... }:
            {
              nixpkgs.hostPlatform = system;
              boot.isContainer = true;
              system.stateVersion = "25.11";
              services.llama-swap = {
                enable = true;
                vllmTimings = {
                  enable = true;
                  dockerGroup = "docker";
                };
                settings.models.qwen.cmd = config.services.llama-swap.vllmTimings.mkCmd {
                  image = "vllm/vllm-openai:v0.11.0";
                  serveArgs = [ "Qwen/Qwen3-8B" ];
                };
              };
            }
          )
        ];
      };
      cfg = nixos.config;
      t = cfg.services.llama-swap.vllmTimings;
      facts = {
        "default package is the flake's" = t.package.drvPath == package.drvPath;
        # builtins.match refuses a pattern with string context.
        "dockerArgs mounts the binary" =
          lib.hasInfix (builtins.unsafeDiscardStringContext "${exe}:/patches/vllm-timings:ro") t.dockerArgs;
        "cmd reaches settings" = lib.hasInfix t.cmdPrefix cfg.services.llama-swap.settings.models.qwen.cmd;
        "SupplementaryGroups" =
          cfg.systemd.services.llama-swap.serviceConfig.SupplementaryGroups == [ "docker" ];
      };
      failed = lib.attrNames (lib.filterAttrs (_: ok: !ok) facts);
    in
    if failed == [ ] then
      pkgs.runCommand "vllm-timings-nixos-module" { } "touch $out"
    else
      throw "nixos-module check failed: ${lib.concatStringsSep ", " failed}";

  # The NixOS VM test: nixpkgs' llama-swap unit, this module and a Docker
  # stand-in; a request through llama-swap must return timings. Needs KVM.
  vm = import ./tests/vm.nix { inherit pkgs module package; };

  # nixfmt (RFC 166 style) over every Nix file. Fix: nix fmt
  format =
    pkgs.runCommand "vllm-timings-nixfmt-check"
      {
        nativeBuildInputs = [ pkgs.nixfmt ];
        src = lib.fileset.toSource {
          root = ../.;
          # testdata holds generated Nix, kept byte for byte as generated.
          fileset = lib.fileset.fileFilter (f: f.hasExt "nix") ../.;
        };
      }
      ''
        cd "$src"
        find . -name '*.nix' -not -path '*/testdata/*' -print0 | sort -z | xargs -0 nixfmt --check || {
          echo "Some Nix files are not formatted; run: nix fmt" >&2
          exit 1
        }
        touch $out
      '';
}
