# package.nix built without nixpkgs: the package file evaluated with
# lib.callPackageWith, the pinned nixpkgs lib and stand-ins for the nixpkgs
# packages it asks for, each mapped to this machine's programs
# (scripts/nix-build-here writes the map). Everything package.nix sets is
# read from the file itself: vendorHash, subPackages, checkFlags,
# preCheck/checkPhase, nativeCheckInputs, env, tags, ldflags.
#
#   import ./default.nix { libDir = ".../nixpkgs-lib/lib"; hostJSON = "..."; tree = /copy/of/repo; }
#   => { package; goModules; values; }
#
# A nixpkgs package the stand-in does not know is an evaluation error that
# names it (callPackageWith's "Function called without required argument").
{
  libDir,
  hostJSON,
  tree,
}:
let
  lib = import ./lib.nix libDir;
  host = builtins.fromJSON hostJSON;
  inherit (host) system;

  hostPackage = import ./host.nix { inherit system; inherit (host) bash mkdir ln; };
  fromHost = name: hostPackage {
    inherit name;
    programs = host.packages.${name} or (throw "the host map has no package ${name}");
  };

  mkDerivation = import ./stdenv.nix {
    inherit system;
    inherit (host) bash;
    tools = fromHost "stdenv";
  };

  go = fromHost "go" // {
    GOOS = "linux";
    GOARCH =
      {
        x86_64-linux = "amd64";
        aarch64-linux = "arm64";
      }
      .${system};
    CGO_ENABLED = "1";
    meta.platforms = lib.platforms.linux;
  };
  git = fromHost "git";

  # python3: the plain interpreter. withPackages gives the host's
  # interpreter that has Python packages (python3-env in the host map), with
  # the programs of the packages asked for, and its build checks that it
  # imports every one of them. pkgs are the Python packages the stand-in
  # knows.
  pythonPackages = {
    pydantic = {
      pythonModule = "pydantic";
      programs = [ ];
    };
    pyflakes = {
      pythonModule = "pyflakes";
      programs = [ "pyflakes" ];
    };
  };
  env = host.packages.python3-env;
  python3 = fromHost "python3" // {
    pkgs = pythonPackages;
    withPackages =
      f:
      let
        wanted = f pythonPackages;
        modules = lib.concatStringsSep ", " (map (p: p.pythonModule) wanted);
      in
      hostPackage {
        name = "python3-env";
        programs = {
          inherit (env) python3;
        }
        // lib.genAttrs (lib.concatMap (p: p.programs) wanted) (p: env.${p});
        check = lib.optionalString (wanted != [ ]) ''
          python3 -c ${lib.escapeShellArg "import ${modules}"} || {
            echo "host-python3-env: ${env.python3} cannot import ${modules}" >&2
            exit 1
          }
        '';
      };
  };

  pkgs = {
    inherit lib python3;
    gitMinimal = git;
    inherit git;
    util-linux = fromHost "util-linux";
    buildGoModule = import ./build-go-module.nix {
      inherit lib go git mkDerivation;
      # Certificates matter only for a network fetch; goModules reads the
      # host's module cache through GOPROXY=file://.
      cacert = hostPackage {
        name = "cacert";
        programs = { };
      };
    };
  };

  file = tree + "/modules/package.nix";
  # The file's own arguments, so that a default it gives stays its own.
  package = lib.callPackageWith pkgs file { };
  fn = import file;
  # What package.nix passed to buildGoModule.
  args = fn (
    builtins.intersectAttrs (builtins.functionArgs fn) pkgs
    // {
      buildGoModule = a: a;
    }
  );
in
{
  inherit package;
  inherit (package) goModules;
  values = {
    inherit (args) vendorHash;
    version = args.version or null;
    subPackages = args.subPackages or null;
    checkFlags = args.checkFlags or null;
    preCheck = args.preCheck or null;
    checkPhase = args.checkPhase or null;
    nativeCheckInputs = map (p: p.name) (args.nativeCheckInputs or [ ]);
    env = args.env or { };
    tags = args.tags or null;
    ldflags = args.ldflags or null;
    doCheck = args.doCheck or true;
  };
}
