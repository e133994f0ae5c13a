# shellcheck shell=bash disable=SC2123,SC2154
# (PATH is set on purpose; the other variables come from the derivation.)
# The builder of stdenv.nix's derivations: the parts of nixpkgs'
# stdenv/generic/setup.sh that a buildGoModule package goes through, written
# for this stand-in. Phases run in order, each the derivation's string when
# it has one, else the default below; hooks (preCheck, postInstall, ...)
# are strings run with eval, as stdenv runs a string hook.
set -eo pipefail

# PATH: each input's bin/, nothing else (Nix starts the builder with
# PATH=/path-not-set).
PATH=
for p in $stdenvInputs; do
  PATH=${PATH:+$PATH:}$p/bin
done
export PATH

runHook() {
  local hook=$1
  if [[ -n ${!hook:-} ]]; then
    eval "${!hook}"
  fi
}

# concatStringsSep SEP VARNAME: the words of a string variable, or the
# elements of an array, joined by SEP (stdenv's function of that name).
concatStringsSep() {
  local sep=$1 type
  type=$(declare -p "$2" 2>/dev/null) || return 0
  local -n ref=$2
  case ${type#declare -} in
  a*)
    local IFS=$sep
    echo -n "${ref[*]}"
    ;;
  A*)
    echo "concatStringsSep: $2 is an associative array" >&2
    return 1
    ;;
  *) echo -n "${ref// /$sep}" ;;
  esac
}

unpackPhase() {
  runHook preUnpack
  # $src is a directory (lib.fileset.toSource's result): stdenv copies it
  # under its name without the store hash and makes it writable.
  local name=${src#"$NIX_STORE"/}
  name=${name#*-}
  cp -pr --reflink=auto -- "$src" "$name"
  chmod -R u+w -- "$name"
  sourceRoot=${sourceRoot:-$name}
  runHook postUnpack
}

patchPhase() {
  runHook prePatch
  local p
  for p in $patches; do
    patch -p1 < "$p"
  done
  runHook postPatch
}

# A phase the derivation sets is a string, run with eval (a bash function
# and a variable may share a name); one it leaves to stdenv runs only its
# hooks (buildGoModule sets all four).
for phase in configurePhase buildPhase checkPhase installPhase; do
  name=${phase%Phase}
  if [[ -n ${!phase:-} ]]; then
    eval "$phase() { eval \"\${$phase}\"; }"
  else
    eval "$phase() { runHook pre${name^}; runHook post${name^}; }"
  fi
done

runPhase() {
  echo "Running phase: $1"
  "$1"
}

cd "$NIX_BUILD_TOP"
runPhase unpackPhase
cd "$sourceRoot"
runPhase patchPhase
runPhase configurePhase
runPhase buildPhase
if [[ -n ${doCheck:-} ]]; then
  runPhase checkPhase
fi
runPhase installPhase
# fixupPhase is left out: it strips, patches shebangs and moves man pages,
# none of which a static Go binary needs. Nix itself still checks
# disallowedReferences.
