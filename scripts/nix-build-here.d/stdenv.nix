# stdenv.mkDerivation for this stand-in: the attributes a buildGoModule
# derivation passes become a `derivation` whose builder is the host's bash
# running ./setup.sh, as nixpkgs' mkDerivation turns them into environment
# variables:
#   - `env`'s attributes are set as variables of their own;
#   - `meta`, `passthru` and the input lists are not passed as they are;
#   - nativeCheckInputs join nativeBuildInputs when doCheck is set;
#   - PATH is the bin/ of those inputs and of `tools` (what stdenv itself
#     provides: coreutils, findutils, grep, sed, awk, tar, gzip, patch,
#     bash, make), nothing else.
# passthru's attributes are added to the result, as nixpkgs does.
{
  system,
  bash,
  tools, # a host package: stdenv's own programs
}:
attrs:
let
  inherit (builtins) removeAttrs;
  doCheck = attrs.doCheck or false;
  inputs =
    (attrs.nativeBuildInputs or [ ])
    ++ (attrs.buildInputs or [ ])
    ++ (if doCheck then attrs.nativeCheckInputs or [ ] ++ attrs.checkInputs or [ ] else [ ])
    ++ [ tools ];
  name = attrs.name or "${attrs.pname}-${attrs.version}";
  drv = derivation (
    removeAttrs attrs [
      "env"
      "meta"
      "passthru"
      "nativeBuildInputs"
      "buildInputs"
      "nativeCheckInputs"
      "checkInputs"
      "pname"
      "version"
      "strictDeps"
    ]
    // (attrs.env or { })
    // {
      inherit name system doCheck;
      builder = bash;
      args = [ ./setup.sh ];
      stdenvInputs = inputs;
      # nixpkgs passes these too, as the build's own variables.
      nativeBuildInputs = attrs.nativeBuildInputs or [ ];
      nativeCheckInputs = attrs.nativeCheckInputs or [ ];
    }
    // (if attrs ? version then { inherit (attrs) version; } else { })
    // (if attrs ? pname then { inherit (attrs) pname; } else { })
  );
in
drv // (attrs.passthru or { }) // { meta = attrs.meta or { }; }
