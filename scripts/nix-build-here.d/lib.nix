# nixpkgs' lib, unmodified, for a Nix older than 2.14 (Debian's nix-bin is
# 2.8): lib.fileset and lib.filesystem call builtins.readFileType, which
# Nix 2.14 added. Every file of lib is imported with a `builtins` that also
# has readFileType, computed from builtins.readDir of the parent directory
# as Nix itself does. Where Nix has readFileType, it is Nix's own.
libDir:
let
  builtins' = builtins // {
    readFileType = builtins.readFileType or (path: (builtins.readDir (dirOf path)).${baseNameOf path});
  };
  scope = {
    builtins = builtins';
    import = scopedImport scope;
  };
in
scopedImport scope (libDir + "/default.nix")
