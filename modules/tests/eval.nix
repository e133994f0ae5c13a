# Evaluates the NixOS module with nothing but nixpkgs' `lib.evalModules`, and
# returns the strings it produces as plain data (strings, bools, lists).
#
# The flake check `module-eval` and the Go test in ./modules (when
# VLLM_TIMINGS_NIXPKGS_LIB points at a nixpkgs lib) both compare the result
# with ./expected.json. The flake check `fragments-match-go` runs
# `vllm-timings nix fragments --format json` for each entry of `fragments` and
# compares it with the module's strings.
{
  lib,
  # A stand-in derivation: only its store path and mainProgram matter here.
  package ? {
    type = "derivation";
    name = "vllm-timings-0.1.0";
    outPath = "/nix/store/00000000000000000000000000000000-vllm-timings-0.1.0";
    meta.mainProgram = "vllm-timings";
  },
  # Host paths of the extra patch sets in the `custom` case.
  patchsets ? [
    "/etc/vllm-timings/first.hcl"
    "/etc/vllm-timings/second.hcl"
  ],
  # true: return the sample configuration itself, a module, for
  # ./nixpkgs-llama-swap.nix to evaluate beside nixpkgs' own module.
  sampleModule ? false,
}:
let
  # What nixpkgs' llama-swap module and NixOS declare, reduced to the parts
  # this module touches.
  stubs = {
    options.warnings = lib.mkOption {
      type = lib.types.listOf lib.types.str;
      default = [ ];
    };
    options.services.llama-swap = {
      enable = lib.mkEnableOption "llama-swap";
      settings = lib.mkOption {
        type = lib.types.submodule { freeformType = lib.types.attrsOf lib.types.anything; };
        default = { };
      };
    };
    options.users.groups = lib.mkOption {
      type = lib.types.attrsOf (lib.types.submodule { freeformType = lib.types.attrsOf lib.types.anything; });
      default = { };
    };
    options.systemd.services = lib.mkOption {
      type = lib.types.attrsOf (
        lib.types.submodule {
          options.serviceConfig = lib.mkOption {
            type = lib.types.attrsOf lib.types.unspecified;
            default = { };
          };
        }
      );
      default = { };
    };
  };

  evalConfig =
    module:
    (lib.evalModules {
      modules = [
        ../nixos/default.nix
        stubs
        {
          # Proves that nothing but `package`'s default needs pkgs.
          _module.args.pkgs = throw "this evaluation has no pkgs";
          services.llama-swap.vllmTimings.package = package;
        }
        module
      ];
    }).config;

  timingsOf = module: (evalConfig module).services.llama-swap.vllmTimings;

  # Option sets whose dockerArgs and cmdPrefix must equal the CLI's output.
  fragmentCases = {
    defaults = { };
    custom = {
      mountPath = "/opt/vllm-timings";
      onFailure = "abort";
      inherit patchsets;
    };
  };

  # A llama-swap configuration in the shape NixOS users write today: one
  # model spliced by hand from dockerArgs and cmdPrefix (docs/nix.md shows it),
  # one cmd built by mkCmd and one entry built by mkModel. The service's PATH
  # has no docker; virtualisation.docker puts it in the system profile.
  docker = "/run/current-system/sw/bin/docker";
  sample =
    { config, ... }:
    let
      inherit (config.services.llama-swap.vllmTimings) mkModel raw;
    in
    {
      services.llama-swap.enable = true;
      services.llama-swap.vllmTimings = {
        enable = true;
        dockerGroup = "docker";
      };
      # What virtualisation.docker.enable declares.
      users.groups.docker = { };
      services.llama-swap.settings.models = {
        "qwen-vllm" = {
          proxy = "http://127.0.0.1:\${PORT}";
          checkEndpoint = "/v1/models";
          macros.ctx = "75000";
          cmd =
            let
              t = config.services.llama-swap.vllmTimings;
              vllmCmd = ''
                set -e;
                ${t.cmdPrefix}
                exec vllm serve --served-model-name ''${MODEL_ID}
                --max-model-len ''${ctx}
                --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'
                --host 0.0.0.0 --port 8000
              '';
              vllmCmdFlat = builtins.replaceStrings [ "\n" ] [ " " ] vllmCmd;
            in
            ''
              ${docker} run --rm --device=nvidia.com/gpu=all \
                --name ''${MODEL_ID} \
                ${t.dockerArgs} \
                -p ''${PORT}:8000 \
                --entrypoint /bin/bash \
                vllm/vllm-openai:v0.11.0 \
                -c "${vllmCmdFlat}"
            '';
          cmdStop = "${docker} stop \${MODEL_ID}";
        };
        "qwen-mkcmd" = {
          proxy = "http://127.0.0.1:\${PORT}";
          cmd = config.services.llama-swap.vllmTimings.mkCmd {
            image = "vllm/vllm-openai:v0.11.0";
            serveArgs = [
              "--served-model-name"
              "\${MODEL_ID}"
              "Qwen/Qwen3-8B"
            ];
            extraDockerArgs = [ "--device=nvidia.com/gpu=all" ];
            inherit docker;
          };
        };
        "qwen-mkmodel" = config.services.llama-swap.vllmTimings.mkModel {
          image = "vllm/vllm-openai:v0.11.0";
          serveArgs = [
            "Qwen/Qwen3-8B"
            "--max-model-len"
            "\${ctx}"
            "--speculative-config"
            ''{"method":"mtp","num_speculative_tokens":3}''
          ];
          macros.ctx = "75000";
          env.HF_HUB_OFFLINE = "1";
          inherit docker;
        };
        # README's model entry, shown beside the nix model command that
        # gives the same entry.
        "qwen3-8b" = mkModel {
          image = "vllm/vllm-openai:v0.11.0";
          serveArgs = [
            "Qwen/Qwen3-8B"
            "--served-model-name"
            "\${MODEL_ID}"
            "--max-model-len"
            "\${ctx}"
          ];
          extraDockerArgs = [ "--device=nvidia.com/gpu=all" ];
          env.HF_HUB_OFFLINE = "1";
          macros.ctx = "75000";
          docker = "/run/current-system/sw/bin/docker";
        };
        # docs/nix.md's complete entry: Genesis-style steps before the
        # patcher, a bash expansion of a variable passed through from
        # llama-swap's environment, the port on all interfaces, and
        # attributes of the user's own that mkModel passes through.
        "qwen-genesis" = mkModel {
          image = "vllm/vllm-openai:nightly-1acd67a795ebccdf9b9db7697ae9082058301657";
          before = [
            "set -e"
            "pip install xxhash pandas scipy -q"
            "python3 -m vllm._genesis.patches.apply_all"
          ];
          env.VLLM_ENFORCE_EAGER = null;
          extraDockerArgs = [
            "--device=nvidia.com/gpu=all"
            "--ipc=host"
          ];
          publish = "\${PORT}:8000";
          macros.ctx = "75000";
          serveArgs = [
            (raw "\${VLLM_ENFORCE_EAGER:+--enforce-eager}")
            "--served-model-name"
            "\${MODEL_ID}"
            "--max-model-len"
            "\${ctx}"
            "--speculative-config"
            ''{"method":"mtp","num_speculative_tokens":3}''
            "--host"
            "0.0.0.0"
            "--port"
            "8000"
          ];
          docker = "/run/current-system/sw/bin/docker";
          name = "Qwen3-Next 80B (vLLM, Genesis)";
          metadata.backend = "vllm";
        };
        "qwen-launcher" = mkModel {
          image = "ghcr.io/example/qwen3-vllm:latest";
          entrypoint = [
            "bash"
            "docker/entrypoint.sh"
          ];
          serveArgs = [ "single" ];
          inherit docker;
        };
        "qwen-venv" = mkModel {
          venv = "/srv/vllm/venv";
          serveArgs = [
            "Qwen/Qwen3-8B"
            "--port"
            "\${PORT}"
          ];
        };
      };
    };

  sampleConfig = evalConfig sample;
  sampleTimings = sampleConfig.services.llama-swap.vllmTimings;

  fails = value: !(builtins.tryEval (builtins.deepSeq value value)).success;
  failsReading =
    name: options: fails (timingsOf { services.llama-swap.vllmTimings = options; }).${name};

  disabled = timingsOf { services.llama-swap.enable = true; };

  # The configuration's only warning is the one that holds text.
  warnsOnly =
    text: module:
    let
      w = (evalConfig module).warnings;
    in
    builtins.length w == 1 && lib.hasInfix text (builtins.head w);
in
if sampleModule then
  sample
else
{
  fragments = lib.mapAttrs (
    _: options:
    let
      t = timingsOf {
        services.llama-swap.vllmTimings = options // {
          enable = true;
        };
      };
    in
    {
      inherit options;
      inherit (t) dockerArgs cmdPrefix;
    }
  ) fragmentCases;

  sample = {
    inherit (sampleConfig.services.llama-swap.settings) models;
    serviceConfig = sampleConfig.systemd.services.llama-swap.serviceConfig;
  };

  checks = {
    # With enable = false, every output is an error, not an empty string.
    disabledDockerArgsFails = fails disabled.dockerArgs;
    disabledCmdPrefixFails = fails disabled.cmdPrefix;
    disabledMkCmdFails = fails (disabled.mkCmd { image = "x"; });
    disabledMkModelFails = fails (disabled.mkModel { image = "x"; });
    # The outputs are read-only.
    dockerArgsIsReadOnly = failsReading "dockerArgs" {
      enable = true;
      dockerArgs = "-v /x:/y:ro";
    };
    # dockerGroup changes nothing unless set, and nothing while llama-swap is off.
    noDockerGroupNoServiceConfig =
      (evalConfig { services.llama-swap.enable = true; }).systemd.services == { };
    dockerGroupNeedsLlamaSwap =
      (evalConfig { services.llama-swap.vllmTimings.dockerGroup = "docker"; }).systemd.services == { };
    # ... and says so, and names serviceName.
    dockerGroupAloneWarns =
      let
        w = (evalConfig { services.llama-swap.vllmTimings.dockerGroup = "docker"; }).warnings;
      in
      builtins.length w == 1 && lib.hasInfix "set services.llama-swap.vllmTimings.serviceName" (builtins.head w);
    noWarningByDefault = (evalConfig { services.llama-swap.enable = true; }).warnings == [ ];
    noWarningForSample = sampleConfig.warnings == [ ];
    # A group users.groups does not have, a serviceName no other module
    # defines, and a serviceName while nixpkgs' unit runs too: one warning
    # each, naming what to change.
    missingGroupWarns = warnsOnly "users.groups.podman = { };" {
      services.llama-swap.enable = true;
      services.llama-swap.vllmTimings.dockerGroup = "podman";
    };
    undefinedUnitWarns = warnsOnly "no module defines systemd.services.my-llama-swap" {
      services.llama-swap.vllmTimings = {
        dockerGroup = "docker";
        serviceName = "my-llama-swap";
      };
      users.groups.docker = { };
    };
    definedUnitDoesNotWarn =
      (evalConfig {
        services.llama-swap.vllmTimings = {
          dockerGroup = "docker";
          serviceName = "my-llama-swap";
        };
        systemd.services.my-llama-swap.serviceConfig.ExecStart = "/bin/llama-swap";
        users.groups.docker = { };
      }).warnings == [ ];
    ownUnitBesideNixpkgsWarns = warnsOnly "Set serviceName = null to give the group to llama-swap's unit" {
      services.llama-swap.enable = true;
      services.llama-swap.vllmTimings = {
        dockerGroup = "docker";
        serviceName = "my-llama-swap";
      };
      systemd.services.my-llama-swap.serviceConfig.ExecStart = "/bin/llama-swap";
      users.groups.docker = { };
    };
    # People who run llama-swap from a unit of their own name it.
    dockerGroupOnOwnUnit =
      (evalConfig {
        services.llama-swap.vllmTimings = {
          dockerGroup = "podman";
          serviceName = "my-llama-swap";
        };
      }).systemd.services == {
        my-llama-swap.serviceConfig.SupplementaryGroups = [ "podman" ];
      };
    # raw needs no enable, and a raw argument in the bash -c form stays unquoted.
    rawWithoutEnable =
      (timingsOf { }).raw "x" == {
        _type = "vllm-timings-raw";
        text = "x";
      };
    # mkModel refuses a cmd of its own, and a misspelt input.
    mkModelRefusesCmd = fails (sampleTimings.mkModel {
      image = "x";
      cmd = "y";
    });
    mkModelRefusesMisspelling = fails (sampleTimings.mkModel {
      image = "x";
      serveArg = [ ];
    });
    # Relative or multi-line mount paths are refused by the option type.
    relativeMountPathFails = failsReading "dockerArgs" {
      enable = true;
      mountPath = "patches/vllm-timings";
    };
    multiLineMountPathFails = failsReading "dockerArgs" {
      enable = true;
      mountPath = "/patches\n/vllm-timings";
    };
    unknownOnFailureFails = failsReading "cmdPrefix" {
      enable = true;
      onFailure = "ignore";
    };
  };
}
