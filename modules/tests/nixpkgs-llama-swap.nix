# The module evaluated beside nixpkgs' own llama-swap module
# (nixos/modules/services/networking/llama-swap.nix, unmodified), with
# lib.evalModules and stand-ins for the few NixOS options and packages that
# module uses: the unit llama-swap really gets, the settings it really
# writes to its config.yaml, and the warnings.
#
# The Go test in ./modules evaluates it with ../shared/nixpkgs-llama-swap;
# a full NixOS evaluation (the flake check nixos-module) and the VM test
# (./vm.nix) need nixpkgs.
{
  lib,
  # nixpkgs' llama-swap.nix.
  llamaSwapModule,
  # Modules evaluated in place of eval.nix's sample (./vm.nix's node).
  configuration ? import ./eval.nix {
    inherit lib;
    sampleModule = true;
  },
  # More of pkgs, for a configuration that uses it: names of packages that
  # stand in as fake store paths.
  morePkgs ? [ ],
}:
let
  fakeStorePath = name: "/nix/store/00000000000000000000000000000000-${name}";

  # What NixOS declares and nixpkgs' llama-swap module sets, as far as this
  # evaluation reads it. Anything else a configuration sets is taken as it
  # is (freeformType): only a real NixOS evaluation checks those options.
  nixosStandIns = {
    freeformType = lib.types.attrsOf lib.types.anything;
    options = {
      warnings = lib.mkOption {
        type = lib.types.listOf lib.types.str;
        default = [ ];
      };
      assertions = lib.mkOption {
        type = lib.types.listOf lib.types.unspecified;
        default = [ ];
      };
      meta = lib.mkOption {
        type = lib.types.attrsOf lib.types.anything;
        default = { };
      };
      users.groups = lib.mkOption {
        type = lib.types.attrsOf (lib.types.submodule { freeformType = lib.types.attrsOf lib.types.anything; });
        default = { };
      };
      networking.firewall.allowedTCPPorts = lib.mkOption {
        type = lib.types.listOf lib.types.port;
        default = [ ];
      };
      systemd.services = lib.mkOption {
        type = lib.types.attrsOf (
          lib.types.submodule {
            freeformType = lib.types.attrsOf lib.types.anything;
            options =
              {
                serviceConfig = lib.mkOption {
                  type = lib.types.attrsOf lib.types.unspecified;
                  default = { };
                };
              }
              # Lists that NixOS concatenates across modules.
              // lib.genAttrs [ "after" "before" "wantedBy" "requires" "wants" "path" ] (
                _:
                lib.mkOption {
                  type = lib.types.listOf lib.types.unspecified;
                  default = [ ];
                }
              );
          }
        );
        default = { };
      };
    };
  };

  # pkgs, with what nixpkgs' llama-swap module takes from it: its package
  # and pkgs.formats.yaml, whose generate keeps the value it would write.
  jsonValue = lib.types.nullOr (
    lib.types.oneOf [
      lib.types.bool
      lib.types.int
      lib.types.float
      lib.types.str
      lib.types.path
      (lib.types.attrsOf jsonValue)
      (lib.types.listOf jsonValue)
    ]
  );
  fakePackage = name: {
    type = "derivation";
    inherit name;
    outPath = fakeStorePath name;
    interpreter = "${fakeStorePath name}/bin/${name}";
  };
  pkgs = lib.genAttrs morePkgs fakePackage // {
    runCommand = name: _: _: fakePackage name;
    llama-swap = {
      type = "derivation";
      name = "llama-swap";
      outPath = fakeStorePath "llama-swap";
      meta.mainProgram = "llama-swap";
    };
    # The file's name carries a hash of the value written, so that ExecStart
    # tells which value nixpkgs' module wrote.
    formats.yaml = _: {
      type = jsonValue;
      generate = name: value: {
        type = "derivation";
        inherit name value;
        outPath = "/nix/store/${
          builtins.substring 0 32 (builtins.hashString "sha256" (builtins.toJSON value))
        }-${name}";
      };
    };
  };

  evalConfig =
    modules:
    (lib.evalModules {
      modules = [
        ../nixos/default.nix
        llamaSwapModule
        nixosStandIns
        {
          _module.args.pkgs = pkgs;
          services.llama-swap.vllmTimings.package = {
            type = "derivation";
            name = "vllm-timings-0.1.0";
            outPath = fakeStorePath "vllm-timings-0.1.0";
            meta.mainProgram = "vllm-timings";
          };
        }
      ]
      ++ modules;
    }).config;

  config = evalConfig [ configuration ];
  unit = config.systemd.services.llama-swap;
  # The config.yaml that ExecStart names is the one written from
  # services.llama-swap.settings.
  configFile = lib.last (lib.splitString " " unit.serviceConfig.ExecStart);
  written = (pkgs.formats.yaml { }).generate "config.yaml" config.services.llama-swap.settings;
in
{
  inherit (config.systemd) services;
  unit = {
    inherit (unit) wantedBy;
    inherit (unit.serviceConfig)
      ExecStart
      DynamicUser
      PrivateUsers
      SupplementaryGroups
      RestrictAddressFamilies
      ;
  };
  inherit configFile;
  configFileIsSettings = configFile == written.outPath;
  # What config.yaml holds: the settings after nixpkgs' module merged them.
  settings = written.value;
  inherit (config) warnings;
  # The same configuration with the warnings' mistakes in it.
  warningsFor = {
    groupNotDeclared =
      (evalConfig [
        configuration
        { users.groups = lib.mkForce { }; }
      ]).warnings;
    serviceNameOfNoUnit =
      (evalConfig [
        configuration
        { services.llama-swap.vllmTimings.serviceName = "my-llama-swap"; }
      ]).warnings;
  };
}
