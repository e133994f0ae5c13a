# Packages whose programs are this machine's: a derivation whose bin/ holds
# a symbolic link to each host program, so that a build's PATH holds exactly
# the packages it declares. The links point outside the store; builds see
# their targets through Nix's sandbox-paths (scripts/nix-build-here).
#
#   hostPackage { name = "git"; programs = { git = "/usr/bin/git"; }; }
#
# Its build fails when a target is not an executable file in the sandbox.
# `check`, shell run with PATH holding only this package's bin/, adds a test
# of its own (e.g. that python imports the modules asked for).
{
  system,
  bash, # the host's bash, the builder
  mkdir, # the host's mkdir and ln, the only other programs the builder runs
  ln,
}:
{
  name,
  programs,
  check ? "",
  passthru ? { },
}:
derivation {
  name = "host-${name}";
  inherit system;
  builder = bash;
  args = [
    "-e"
    "-c"
    ''
      ${mkdir} -p "$out/bin"
      while read -r program target; do
        [[ -n $program ]] || continue
        if [[ ! -f $target || ! -x $target ]]; then
          echo "host-${name}: $target (for $program) is not an executable file in the build sandbox" >&2
          exit 1
        fi
        ${ln} -s "$target" "$out/bin/$program"
      done <<< "$programs"
      PATH=$out/bin
      ${check}
    ''
  ];
  programs = builtins.concatStringsSep "\n" (
    map (p: "${p} ${programs.${p}}") (builtins.attrNames programs)
  );
}
// passthru
