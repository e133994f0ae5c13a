# NixOS module: services.llama-swap.vllmTimings.
#
# It turns a few typed options into the strings a llama-swap `cmd` needs to run
# vllm-timings inside a vLLM Docker container: the read-only `dockerArgs`,
# `cmdPrefix`, `mkCmd` and `mkModel`. The strings themselves come from
# ./fragments.nix, the builtins-only function that `vllm-timings nix` is
# tested against, so the module and the CLI cannot drift apart.
#
# Apart from the default of `package`, everything here needs only nixpkgs'
# `lib`, so `lib.evalModules` alone can evaluate it (see ./tests/eval.nix).
{
  config,
  options,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.services.llama-swap.vllmTimings;
  opts = options.services.llama-swap.vllmTimings;
  opt = "services.llama-swap.vllmTimings";

  fragments = import ./fragments.nix {
    binary = lib.getExe cfg.package;
    inherit (cfg) mountPath onFailure;
    # Interpolation copies a path literal such as ./extra.hcl into the store,
    # so the Docker daemon mounts the store copy; strings pass unchanged.
    patchsets = map (p: "${p}") cfg.patchsets;
  };

  # Reading an output while the module is disabled is a mistake, and a config
  # that splices an empty string would start vLLM without timings, silently.
  whenEnabled =
    name: value:
    if cfg.enable then
      value
    else
      throw "${opt}.${name} is used by your configuration, but ${opt}.enable is false. Set `${opt}.enable = true;`, or remove the use of ${name}.";
in
{
  options.services.llama-swap.vllmTimings = {
    enable = lib.mkEnableOption ''
      vllm-timings for vLLM models run by llama-swap in Docker. This computes
      {option}`${opt}.dockerArgs`, {option}`${opt}.cmdPrefix` and
      {option}`${opt}.mkCmd` for your model entries in
      {option}`services.llama-swap.settings`; it changes no model by itself'';

    package = lib.mkOption {
      type = lib.types.package;
      default = pkgs.callPackage ../package.nix { };
      defaultText = lib.literalMD "this flake's `modules/package.nix`, built with the system's own `pkgs` (`pkgs.callPackage`)";
      description = ''
        The vllm-timings package. Its statically linked binary,
        `lib.getExe package`, is mounted read-only into the container straight
        from the Nix store, so the Docker daemon must run on this host.
      '';
    };

    mountPath = lib.mkOption {
      type = lib.types.addCheck lib.types.str (s: builtins.match "/[^\n]*" s != null) // {
        description = "absolute path, one line";
      };
      default = "/patches/vllm-timings";
      example = "/opt/vllm-timings";
      description = ''
        Absolute path inside the container where the binary is mounted.
        Extra patch sets are mounted next to it.
      '';
    };

    onFailure = lib.mkOption {
      type = lib.types.enum [
        "warn"
        "abort"
      ];
      default = "warn";
      example = "abort";
      description = ''
        What `vllm-timings apply` does when it cannot patch the vLLM in the
        image (passed as `--on-failure`). `warn` prints the problem and vLLM
        starts without timings; `abort` fails the container before vLLM starts,
        and llama-swap reports the model as failed.
      '';
    };

    patchsets = lib.mkOption {
      type = lib.types.listOf lib.types.path;
      default = [ ];
      example = lib.literalExpression "[ ./vllm-timings/my-fork.hcl ]";
      description = ''
        Extra HCL patch sets, added to the embedded ones. Each is mounted
        read-only into the container and passed to `apply --patchset`. Path
        literals are copied into the Nix store first.
      '';
    };

    dockerGroup = lib.mkOption {
      type = lib.types.nullOr lib.types.str;
      default = null;
      example = "docker";
      description = ''
        The llama-swap service runs with `DynamicUser = true`, so by default
        it cannot open the Docker socket and every `docker run` in a model's
        `cmd` fails with "permission denied". Setting this to the group that
        owns the socket (`"docker"` for {option}`virtualisation.docker`,
        `"podman"` for podman's Docker-compatible socket) adds it to the
        `SupplementaryGroups` of the llama-swap unit: nixpkgs' own
        (`systemd.services.llama-swap`, when {option}`services.llama-swap.enable`
        is set), or the unit named by {option}`${opt}.serviceName`. With
        neither, the setting warns that it changes nothing; it also warns
        when `users.groups` has no such group, when no other module defines
        the unit {option}`${opt}.serviceName` names, and when that unit gets
        the group while nixpkgs' llama-swap unit, also enabled, does not.

        The default, `null`, changes nothing. To do it yourself instead:
        `systemd.services.llama-swap.serviceConfig.SupplementaryGroups = [ "docker" ];`

        Membership of the Docker group is equivalent to root on the host.
        This setting does not depend on {option}`${opt}.enable`.
      '';
    };

    serviceName = lib.mkOption {
      type = lib.types.nullOr (lib.types.strMatching "[A-Za-z0-9:_.@\\-]+");
      default = null;
      example = "my-llama-swap";
      description = ''
        The systemd service (without `.service`) that runs llama-swap, for
        people who run it from a unit of their own rather than nixpkgs'
        {option}`services.llama-swap`. {option}`${opt}.dockerGroup` is added
        to `systemd.services.<serviceName>.serviceConfig.SupplementaryGroups`.
        `null` means nixpkgs' unit, `llama-swap`, when
        {option}`services.llama-swap.enable` is set.
      '';
    };

    raw = lib.mkOption {
      type = lib.types.functionTo lib.types.attrs;
      readOnly = true;
      example = lib.literalExpression ''config.services.llama-swap.vllmTimings.raw "\''${VLLM_ENFORCE_EAGER:+--enforce-eager}"'';
      description = ''
        Marks a serve argument for {option}`${opt}.mkCmd` and
        {option}`${opt}.mkModel` as bash text: it goes into `bash -c`
        unquoted, so that bash expands it (`''${VAR:+--flag}` gives `--flag`
        when `VAR` is set and non-empty, and nothing otherwise). llama-swap
        still substitutes its macros in it. A plain string holding a bash
        expansion is refused, because quoting would pass it to vLLM as
        literal text. Usable whether or not {option}`${opt}.enable` is set.
      '';
    };

    patchVllm = lib.mkOption {
      type = lib.types.functionTo lib.types.package;
      readOnly = true;
      example = lib.literalExpression ''
        let
          t = config.services.llama-swap.vllmTimings;
          vllm = t.patchVllm pkgs.python3Packages.vllm;
        in
        {
          services.llama-swap.settings.models."qwen-native" = {
            cmd = "''${vllm}/bin/vllm serve Qwen/Qwen3-8B --host 127.0.0.1 --port ''${PORT}";
            proxy = "http://127.0.0.1:''${PORT}";
            checkEndpoint = "/v1/models";
          };
        }
      '';
      description = ''
        For llama-swap models that run nixpkgs' own vLLM natively, without
        Docker: `patchVllm pkgs.python3Packages.vllm` is that package with
        the timings patch applied at build time (an `overridePythonAttrs`
        whose `postInstall` runs `vllm-timings apply --on-failure abort`
        on `$out/''${python.sitePackages}/vllm`, with
        {option}`${opt}.patchsets`, and with {option}`${opt}.package` built
        for the build machine, `pkgs.buildPackages`, when it is the default;
        a package you set runs as it is, so it must run there). The store is
        read-only, so the patch cannot be applied where vLLM runs; a vLLM that
        no patch set fits fails the build. The override misses the binary
        cache: the first build compiles vLLM. Use its `bin/vllm` in a model's
        `cmd` directly (no `dockerArgs`, `cmdPrefix` or `mkCmd`), and make it
        listen on `''${PORT}`. The flake's `overlays.vllm` patches every
        `python3Packages.vllm`, and so `pkgs.vllm`, instead. Usable whether or
        not {option}`${opt}.enable` is set.
      '';
    };

    dockerArgs = lib.mkOption {
      type = lib.types.str;
      readOnly = true;
      example = "-v /nix/store/…-vllm-timings-0.1.0/bin/vllm-timings:/patches/vllm-timings:ro";
      description = ''
        The `docker run` arguments that mount the binary (and each patch set)
        read-only into the container, one line of words ready to splice into
        a model's `cmd` before the image name. Read-only; reading it while
        {option}`${opt}.enable` is false is an evaluation error.
      '';
    };

    cmdPrefix = lib.mkOption {
      type = lib.types.str;
      readOnly = true;
      example = "/patches/vllm-timings apply --on-failure warn || true;";
      description = ''
        The statement that runs the patcher, to put before `exec vllm serve`
        inside the `bash -c "..."` string; it ends with `;`. It is already
        escaped for the inside of those double quotes. With `onFailure = "warn"`
        it ends in `|| true;`, with `"abort"` in `|| exit $?;`. Read-only;
        reading it while {option}`${opt}.enable` is false is an evaluation
        error.
      '';
    };

    mkCmd = lib.mkOption {
      type = lib.types.functionTo lib.types.str;
      readOnly = true;
      example = lib.literalExpression ''
        config.services.llama-swap.vllmTimings.mkCmd {
          image = "vllm/vllm-openai:v0.11.0";
          serveArgs = [ "--served-model-name" "\''${MODEL_ID}" "Qwen/Qwen3-8B" ];
          extraDockerArgs = [ "--device=nvidia.com/gpu=all" ];
          docker = lib.getExe pkgs.docker;
        }
      '';
      description = ''
        A function that builds a whole llama-swap `cmd` string for a vLLM
        model, with {option}`${opt}.dockerArgs` and {option}`${opt}.cmdPrefix`
        already in place: the same string that `vllm-timings nix model`
        prints. Its argument:

        - `image`: the Docker image;
        - `serveArgs`: the `vllm serve` arguments, a list of words, each
          passed literally (they may use `''${MODEL_ID}`, `''${PORT}` and the
          macros named in `macros`), or bash text made with
          {option}`${opt}.raw`;
        - `before`: bash statements run in the container, in order and
          verbatim, before the patcher, e.g.
          `[ "set -e" "pip install xxhash pandas scipy -q" ]`; each gets its
          `;`, so do not end one in `;`;
        - `extraDockerArgs`: more `docker run` words, passed literally;
        - `env`: an attribute set, each entry passed as `-e NAME=VALUE`, or
          `-e NAME` for `NAME = null` (docker copies llama-swap's own value,
          when it has one: set it in the service's environment, or in the
          entry's llama-swap `env` list);
        - `publish`: the `docker run -p` mapping, `"127.0.0.1:''${PORT}:8000"`
          by default; `"''${PORT}:8000"` publishes on all interfaces. It must
          map `''${PORT}`, where llama-swap's proxy connects;
        - `docker`: the docker (or podman) executable, `"docker"` by default.
          The llama-swap service's `PATH` has no docker, so give an absolute
          path such as `lib.getExe pkgs.docker`;
        - `macros`: the model's llama-swap macros;
        - `entrypoint`: for images whose entrypoint is a launcher, the
          entrypoint as a list, e.g. `[ "bash" "docker/entrypoint.sh" ]`. The
          patcher becomes the container's entrypoint and runs it through
          `vllm-timings exec`, with `serveArgs` after it and no `bash -c`
          (so no `before` and no raw arguments);
        - `venv`: a virtualenv on this host that holds `bin/vllm`. vLLM then
          runs without Docker: `vllm-timings exec --vllm-bin VENV/bin/vllm --
          VENV/bin/vllm serve ...`, and `serveArgs` must make it listen on
          `''${PORT}` (`"--port" "''${PORT}"`). For nixpkgs' own vllm, patch the
          package instead: see the flake's `lib.patchVllm`.

        In the Docker forms the result is a `docker run --rm --name ''${MODEL_ID}`
        command that publishes `publish`, mounts the binary and runs
        `bash -c "<before>; <cmdPrefix> exec vllm serve …"`. Its word groups
        are on separate lines ending in a backslash, which llama-swap joins.
        Input that cannot reach vLLM unchanged is an evaluation error saying
        what to change.
        Read-only; calling it while {option}`${opt}.enable` is false is an
        evaluation error.
      '';
    };

    mkModel = lib.mkOption {
      type = lib.types.functionTo (lib.types.attrsOf lib.types.anything);
      readOnly = true;
      example = lib.literalExpression ''
        {
          services.llama-swap.settings.models.qwen = config.services.llama-swap.vllmTimings.mkModel {
            image = "vllm/vllm-openai:v0.11.0";
            serveArgs = [ "Qwen/Qwen3-8B" "--max-model-len" "\''${ctx}" ];
            macros.ctx = "32768";
            docker = lib.getExe pkgs.docker;
          };
        }
      '';
      description = ''
        Like {option}`${opt}.mkCmd`, with the same argument, but returns a
        whole llama-swap model entry: `cmd`, `cmdStop` (not with `venv`),
        `proxy`, `checkEndpoint` and, when given, `macros`. The same entry
        that `vllm-timings nix model` prints. Other attributes of the
        argument (`name`, `metadata`, `aliases`, `ttl`, ...) are passed
        through into the entry; `cmdStop`, `proxy` or `checkEndpoint` given
        that way replace the defaults, and `cmd` is refused. Read-only;
        calling it while {option}`${opt}.enable` is false is an evaluation
        error.
      '';
    };
  };

  config =
    let
      # The unit that gets dockerGroup: the user's own, or nixpkgs'.
      unit =
        if cfg.serviceName != null then
          cfg.serviceName
        else if config.services.llama-swap.enable then
          "llama-swap"
        else
          null;
      # Whether a module besides this one defines the user's unit: this
      # module's own definition is one of options.systemd.services'.
      unitDefined =
        builtins.length (
          builtins.filter (d: d ? ${cfg.serviceName}) options.systemd.services.definitions
        ) > 1;
      # Evaluations without NixOS's users module (lib.evalModules with
      # stand-ins) cannot tell, and do not warn.
      groupDeclared =
        !(options ? users.groups) || config.users.groups ? ${cfg.dockerGroup};
      # patchVllm runs the patcher while vLLM builds, so on the build
      # platform: the default package is built with pkgs.buildPackages, as
      # overlays.vllm does. A package the user sets is used as it is.
      patcherForBuild =
        if opts.package.highestPrio == (lib.mkOptionDefault { }).priority then
          pkgs.buildPackages.callPackage ../package.nix { }
        else
          cfg.package;
    in
    lib.mkMerge [
      {
        services.llama-swap.vllmTimings = {
          dockerArgs = whenEnabled "dockerArgs" fragments.dockerArgs;
          cmdPrefix = whenEnabled "cmdPrefix" fragments.cmdPrefix;
          mkCmd = args: whenEnabled "mkCmd" (fragments.mkCmd args);
          mkModel = args: whenEnabled "mkModel" (fragments.mkModel args);
          inherit (fragments) raw;
          patchVllm =
            vllm:
            import ../vllm.nix { inherit lib; } {
              inherit vllm;
              vllm-timings = patcherForBuild;
              patchsets = map (p: "${p}") cfg.patchsets;
            };
        };
        warnings =
          lib.optional (cfg.dockerGroup != null && unit == null) ''
            ${opt}.dockerGroup = "${cfg.dockerGroup}" changes nothing: services.llama-swap.enable is false and ${opt}.serviceName is null, so no unit gets the group. If you run llama-swap from a unit of your own, set ${opt}.serviceName to its name.''
          ++ lib.optional (cfg.dockerGroup != null && cfg.serviceName != null && !unitDefined) ''
            ${opt}.serviceName = "${cfg.serviceName}", but no module defines systemd.services.${cfg.serviceName} besides this one: dockerGroup creates a unit of that name that runs nothing. Set it to the name of the unit that runs llama-swap.''
          ++
            lib.optional
              (cfg.dockerGroup != null && cfg.serviceName != null && config.services.llama-swap.enable)
              ''
                ${opt}.dockerGroup = "${cfg.dockerGroup}" goes to ${opt}.serviceName's unit, ${cfg.serviceName}, and not to nixpkgs' llama-swap unit, which services.llama-swap.enable also runs. Set serviceName = null to give the group to llama-swap's unit.''
          ++ lib.optional (cfg.dockerGroup != null && unit != null && !groupDeclared) ''
            ${opt}.dockerGroup = "${cfg.dockerGroup}", but users.groups has no group of that name, so the unit cannot start with it. Enable what creates the socket's group (virtualisation.docker.enable for "docker", virtualisation.podman.dockerSocket.enable for "podman"), or declare it: users.groups.${cfg.dockerGroup} = { };'';
      }
      (lib.mkIf (cfg.dockerGroup != null && unit != null) {
        # (mkIf reads the attribute names even when its condition is false.)
        systemd.services.${if unit == null then "llama-swap" else unit}.serviceConfig.SupplementaryGroups =
          [ cfg.dockerGroup ];
      })
    ];
}
