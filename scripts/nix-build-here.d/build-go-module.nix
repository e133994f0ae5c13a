# buildGoModule for this stand-in: what nixpkgs' buildGoModule
# (pkgs/build-support/go/module.nix, the lib.extendMkDerivation version of
# 2025) does with a package's arguments, written again for ./stdenv.nix so
# that a package file can be built here without nixpkgs:
#
# goModules, a fixed-output derivation: `go mod vendor` in the source (after
# the package's patches, preBuild and `env`), refused when the source has a
# vendor/ already or when nothing is vendored; its output is vendor/ and Nix
# checks its NAR hash against vendorHash. GOPROXY reaches it as an impure
# variable, as in nixpkgs.
#
# The package:
#   - configure: GOCACHE and GOPATH under TMPDIR, GOPROXY=off, GOSUMDB=off,
#     cd modRoot, vendor/ replaced by goModules;
#   - environment: GOFLAGS = the package's GOFLAGS, -mod=vendor, -trimpath;
#     env's attributes, then GOOS, GOARCH, GO111MODULE=on,
#     GOTOOLCHAIN=local, CGO_ENABLED (env's, else go's);
#     ldflags gets -buildid= unless it sets one;
#   - build: `go install` of each of subPackages, or of every directory with
#     Go files outside vendor/, testdata, examples, Godeps, _* and
#     excludedPackages, with -tags, -ldflags and -p $NIX_BUILD_CORES; "no Go
#     files" is not an error;
#   - check (doCheck defaults to true): the package's checkPhase, or
#     `go test` of the same directories (with _test.go files when
#     subPackages is unset) one at a time, with -trimpath dropped from
#     GOFLAGS, the build flags, -vet=off and checkFlags;
#   - install: $GOPATH/bin copied to $out/bin;
#   - disallowedReferences: go, unless allowGoReference.
# Not supported, and refused: proxyVendor, buildTestBinaries,
# deleteVendor, vendorHash = null.
{
  lib,
  go,
  git,
  cacert,
  mkDerivation,
}:
args:
let
  refuse =
    name: args ? ${name} && args.${name} != false && args.${name} != null;
  unsupported = builtins.filter refuse [
    "proxyVendor"
    "buildTestBinaries"
    "deleteVendor"
    "overrideModAttrs"
  ];
  vendorHash =
    if !(args ? vendorHash) then
      throw "buildGoModule: vendorHash is missing"
    else if args.vendorHash == null then
      throw "the buildGoModule stand-in does not support vendorHash = null"
    else
      args.vendorHash;
  modRoot = args.modRoot or "./";
  name = args.name or "${args.pname}-${args.version}";
  ldflags = args.ldflags or [ ];
  GOFLAGS = args.GOFLAGS or [ ];

  # Shell shared by the build and check phases (nixpkgs defines the same
  # two functions in its buildPhase, and its checkPhase uses them).
  goDirs = ''
    # goDirs SUFFIX: the directories to build ("") or test ("_test").
    goDirs() {
      if [[ -n $subPackages ]]; then
        local p
        for p in $subPackages; do echo "./$p"; done
        return
      fi
      local skip='\(/_\|examples\|Godeps\|testdata'
      local p
      for p in $excludedPackages; do skip+="\\|$p"; done
      skip+='\)'
      find . -type f -name "*$1.go" -exec dirname {} \; | grep -v /vendor/ | sort -u | grep -v "$skip"
    }
    # goDir CMD DIR: go CMD with the package's flags; "no Go files" passes.
    goDir() {
      local cmd=$1 dir=$2 out
      local -a flags=()
      if [[ -n ''${tags:-} ]]; then flags+=("-tags=$(concatStringsSep , tags)"); fi
      if [[ -n ''${ldflags:-} ]]; then flags+=("-ldflags=$ldflags"); fi
      flags+=(-p "$NIX_BUILD_CORES")
      if [[ $cmd == test ]]; then
        flags+=(-vet=off)
        flags+=(''${checkFlags:-})
      fi
      if ! out=$(go "$cmd" "''${flags[@]}" "$dir" 2>&1); then
        if ! grep -qE '(no( buildable| non-test)?|build constraints exclude all) Go (source )?files' <<<"$out"; then
          echo "$out" >&2
          return 1
        fi
      fi
      if [[ -n $out ]]; then echo "$out" >&2; fi
    }
  '';

  goModules = mkDerivation {
    name = "${name}-go-modules";
    nativeBuildInputs = (args.nativeBuildInputs or [ ]) ++ [
      go
      git
      cacert
    ];
    inherit (args) src;
    inherit modRoot;
    prePatch = args.prePatch or "";
    patches = args.patches or [ ];
    postPatch = args.postPatch or "";
    preBuild = args.preBuild or "";
    postBuild = args.modPostBuild or "";
    env = args.env or { };
    impureEnvVars = [
      "http_proxy"
      "https_proxy"
      "ftp_proxy"
      "all_proxy"
      "no_proxy"
      "GIT_PROXY_COMMAND"
      "SOCKS_SERVER"
      "GOPROXY"
    ];
    configurePhase = ''
      runHook preConfigure
      export GOCACHE=$TMPDIR/go-cache GOPATH=$TMPDIR/go
      cd "$modRoot"
      runHook postConfigure
    '';
    buildPhase = ''
      runHook preBuild
      if [[ -d vendor ]]; then
        echo "vendor folder exists, please set 'vendorHash = null;' in your expression" >&2
        exit 10
      fi
      go mod vendor
      mkdir -p vendor
      runHook postBuild
    '';
    installPhase = ''
      runHook preInstall
      cp -r --reflink=auto vendor "$out"
      if [[ -z $(ls -A "$out") ]]; then
        echo "vendor folder is empty, please set 'vendorHash = null;' in your expression" >&2
        exit 10
      fi
      runHook postInstall
    '';
    outputHashMode = "recursive";
    outputHash = vendorHash;
  };

  package = mkDerivation (
    builtins.removeAttrs args [
      "vendorHash"
      "modRoot"
      "GOFLAGS"
      "ldflags"
      "env"
    ]
    // {
      inherit name modRoot goModules;
      nativeBuildInputs = [ go ] ++ (args.nativeBuildInputs or [ ]);
      env = (args.env or { }) // {
        inherit (go) GOOS GOARCH;
        GO111MODULE = "on";
        GOTOOLCHAIN = "local";
        CGO_ENABLED = args.env.CGO_ENABLED or go.CGO_ENABLED;
      };
      GOFLAGS =
        GOFLAGS
        ++ (
          if lib.any (lib.hasPrefix "-mod=") GOFLAGS then
            throw "use `proxyVendor` instead of setting -mod= in GOFLAGS"
          else
            [ "-mod=vendor" ]
        )
        ++ [ "-trimpath" ];
      ldflags = ldflags ++ lib.optional (!lib.any (lib.hasPrefix "-buildid=") ldflags) "-buildid=";
      configurePhase =
        args.configurePhase or ''
          runHook preConfigure
          export GOCACHE=$TMPDIR/go-cache GOPATH=$TMPDIR/go GOPROXY=off GOSUMDB=off
          cd "$modRoot"
          rm -rf vendor
          cp -r --reflink=auto "$goModules" vendor
          runHook postConfigure
        '';
      buildPhase =
        args.buildPhase or ''
          runHook preBuild
          ${goDirs}
          if [[ -z ''${enableParallelBuilding:-} ]]; then export NIX_BUILD_CORES=1; fi
          for pkg in $(goDirs ""); do
            echo "Building subPackage $pkg"
            goDir install "$pkg"
          done
          runHook postBuild
        '';
      enableParallelBuilding = args.enableParallelBuilding or true;
      doCheck = args.doCheck or true;
      # goDirs and goDir are the default buildPhase's, as in nixpkgs.
      checkPhase =
        args.checkPhase or ''
          runHook preCheck
          # Tests may read their files by path: no -trimpath.
          export GOFLAGS=''${GOFLAGS//-trimpath/}
          for pkg in $(goDirs _test); do
            goDir test "$pkg"
          done
          runHook postCheck
        '';
      installPhase =
        args.installPhase or ''
          runHook preInstall
          mkdir -p "$out"
          if [[ -e $GOPATH/bin ]]; then cp -r "$GOPATH/bin" "$out"; fi
          runHook postInstall
        '';
      disallowedReferences = lib.optional (!(args.allowGoReference or false)) go;
      passthru = (args.passthru or { }) // {
        inherit go goModules vendorHash;
      };
      meta = {
        platforms = go.meta.platforms or lib.platforms.all;
      } // (args.meta or { });
    }
  );
in
if unsupported != [ ] then
  throw "the buildGoModule stand-in does not support ${lib.concatStringsSep ", " unsupported}"
else
  package
