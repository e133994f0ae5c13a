# vllm-timings: the llama-swap `cmd` fragments for a vLLM Docker model, in plain Nix.
#
# This file and Go package nixgen are two implementations of one contract:
# `vllm-timings nix fragments|model --format json` prints exactly the strings
# computed here, and nixgen's tests check that for many inputs. It uses
# builtins only, so it can be imported without nixpkgs.
#
# Interface (stable; the NixOS module imports this file):
#
#   fragments = import ./fragments.nix {
#     binary;                                # host path of the static vllm-timings binary,
#                                            #   a string or a path, e.g. "${pkg}/bin/vllm-timings"
#     mountPath ? "/patches/vllm-timings";   # where the binary appears in the container
#     onFailure ? "warn";                    # "warn" (vLLM starts without timings) | "abort"
#     patchsets ? [ ];                       # host paths of extra patch set files; patch set n
#                                            #   (from 1) is mounted read-only at
#                                            #   "${mountPath}.d/<n>-<basename>" and given to
#                                            #   `apply --patchset`
#   };
#
#   fragments.dockerArgs  # string for the `docker run` line: one `-v HOST:CONTAINER:ro`
#                         #   per file, words quoted for llama-swap's POSIX-style splitting
#   fragments.cmdPrefix   # string for inside `-c "..."` before `exec vllm serve`; runs the
#                         #   patcher and ends with ";". It is already escaped for the
#                         #   double quotes of -c "...".
#   fragments.mkCmd {     # the whole llama-swap `cmd` string, as `vllm-timings nix model` gives
#     image;                  # Docker image
#     serveArgs ? [ ];        # argv words after `vllm serve`, passed literally (each is quoted)
#     extraDockerArgs ? [ ];  # more `docker run` words, passed literally
#     env ? { };              # container environment: each becomes -e NAME=VALUE
#     docker ? "docker";      # the docker (or podman) executable
#     macros ? { };           # the model's llama-swap macros, which words may use as ${name}
#                             #   (strings, numbers or booleans)
#   }
#   fragments.mkModel { same arguments as mkCmd }
#     # => { cmd; cmdStop; proxy; checkEndpoint; macros (only when not empty); }
#     #    a model entry for llama-swap's `models`
#
# The cmd runs `docker run --rm --name ${MODEL_ID}`, publishes
# 127.0.0.1:${PORT} to vLLM's default port 8000 and ends in a newline.
# Words may use the llama-swap macros ${MODEL_ID}, ${PORT} and the declared
# macros, which llama-swap substitutes; any other ${NAME} is refused, because
# llama-swap refuses to load it. Macro values must be plain words (no spaces
# or shell characters), and model names valid Docker container names (only
# vllm-timings checks that; this file never sees the name).
# Inputs that cannot pass through Nix, llama-swap and bash unchanged make the
# evaluation fail with a message that says what to change. vllm-timings (Go)
# checks more: it refuses every non-printable character, while this file
# refuses ASCII controls and the usual invisible Unicode characters only.
{
  binary,
  mountPath ? "/patches/vllm-timings",
  onFailure ? "warn",
  patchsets ? [ ],
}:
let
  inherit (builtins)
    all
    attrNames
    baseNameOf
    concatStringsSep
    elem
    filter
    fromJSON
    genList
    isAttrs
    isBool
    isFloat
    isInt
    isList
    isPath
    isString
    length
    map
    match
    replaceStrings
    split
    stringLength
    substring
    throw
    toJSON
    toString
    typeOf
    ;

  fail =
    what: value: msg:
    throw "vllm-timings fragments.nix: ${what} ${toJSON value}: ${msg}";

  hasAny = needles: s: replaceStrings needles (map (_: "") needles) s != s;
  hasSuffix =
    suffix: s:
    let
      n = stringLength s;
      k = stringLength suffix;
    in
    n >= k && substring (n - k) k s == suffix;

  # Characters that no layer can carry: ASCII controls, DEL, C1 controls and
  # the usual invisible Unicode characters (spaces other than U+0020, format
  # characters, U+FFFD).
  hexDigits = "0123456789abcdef";
  hex2 = i: substring (i / 16) 1 hexDigits + substring (i - i / 16 * 16) 1 hexDigits;
  char = code4: fromJSON "\"\\u${code4}\"";
  range = from: to: genList (i: from + i) (to - from + 1);
  unprintable =
    map (i: char "00${hex2 i}") (range 1 31 ++ range 127 160 ++ [ 173 ])
    ++ map char [
      "061c"
      "1680"
      "180e"
      "2000"
      "2001"
      "2002"
      "2003"
      "2004"
      "2005"
      "2006"
      "2007"
      "2008"
      "2009"
      "200a"
      "200b"
      "200c"
      "200d"
      "200e"
      "200f"
      "2028"
      "2029"
      "202a"
      "202b"
      "202c"
      "202d"
      "202e"
      "202f"
      "205f"
      "2060"
      "2061"
      "2062"
      "2063"
      "2064"
      "2066"
      "2067"
      "2068"
      "2069"
      "206a"
      "206b"
      "206c"
      "206d"
      "206e"
      "206f"
      "3000"
      "feff"
      "fff9"
      "fffa"
      "fffb"
      "fffd"
    ];

  # ${NAME} and ${env.NAME} are what llama-swap substitutes (or refuses) when
  # it loads the config (internal/config/macros.go).
  macroPattern = "\\$\\{([a-zA-Z0-9_-]+)[}]";
  macroRefs = s: map builtins.head (filter isList (split macroPattern s));
  envRefs = s: map builtins.head (filter isList (split "\\$\\{env\\.([a-zA-Z_][a-zA-Z0-9_]*)[}]" s));

  checkText =
    what: s:
    if hasAny [ "\n" ] s then
      fail what s
        "contains a newline; llama-swap's cmd is split into lines before it is run, so a newline cannot be passed through. Remove it or choose another name."
    else if hasAny unprintable s then
      fail what s
        "contains a non-printable character; llama-swap's command splitter does not understand the $'...' quoting it would need. Remove it or choose another name."
    else
      s;

  checkPath =
    what: p:
    let
      s = toString p;
    in
    if isAttrs p then
      fail what "<attribute set>"
        "is an attribute set (a package?); pass the path of the file, for example \"\${pkg}/bin/vllm-timings\"."
    else if !(isString p || isPath p) then
      fail what (typeOf p) "must be a string or a path."
    else if s == "" then
      fail what s "is empty; give an absolute path."
    else if builtins.substring 0 1 (checkText what s) != "/" then
      fail what s
        "is not an absolute path; docker run -v needs absolute paths (a relative host path would name a Docker volume)."
    else if s == "/" then
      fail what s "is the root directory; give the path of a file."
    else if
      hasAny [ "//" "/./" "/../" ] s || hasSuffix "/" s || hasSuffix "/." s || hasSuffix "/.." s
    then
      fail what s "is not a clean path; remove \"//\", \"/./\", \"/../\" and any trailing \"/\"."
    else if hasAny [ ":" ] s then
      fail what s
        "contains \":\", which docker run -v uses to separate HOST:CONTAINER:OPTIONS; rename the file or use a path without \":\"."
    else if macroRefs s != [ ] then
      fail what s
        "contains \${${builtins.head (macroRefs s)}}, which llama-swap would replace with a macro's value or refuse as an unknown macro; rename the path."
    else if envRefs s != [ ] then
      fail what s
        "contains \${env.${builtins.head (envRefs s)}}, which llama-swap would replace with an environment variable; rename the path."
    else
      s;

  # A port of mvdan.cc/sh/v3 syntax.Quote (v3.12) for printable input: the
  # same characters force quoting, and the same quoting style is chosen, so
  # Go and Nix agree byte for byte.
  shellSpecial = [
    ";"
    "\""
    "'"
    "("
    ")"
    "$"
    "|"
    "&"
    ">"
    "<"
    "`"
    " "
    "\t"
    "\r"
    "\n"
    "\\"
    "#"
    "{"
    "~"
    "*"
    "?"
    "["
    "="
  ];
  shellKeywords = [
    "!"
    "[["
    "]]"
    "case"
    "coproc"
    "do"
    "done"
    "else"
    "esac"
    "fi"
    "for"
    "function"
    "if"
    "in"
    "select"
    "then"
    "time"
    "until"
    "while"
    "{"
    "}"
  ];
  shQuote =
    s:
    if s == "" then
      "''"
    else if !(hasAny shellSpecial s) && !(elem s shellKeywords) then
      s
    else if !(hasAny [ "'" ] s) then
      "'" + s + "'"
    else
      "\"" + dqEscape s + "\"";

  # Quotes a word whose ${NAME} macro references must stay visible to
  # llama-swap, which substitutes them as plain text before it splits the
  # command (nixgen's quoteWord): without references it is shQuote; with
  # them, the word is left bare if no literal part needs quoting, and is
  # double-quoted otherwise. Macro values are bare-word safe (checkMacros).
  quoteWord =
    s:
    let
      parts = split macroPattern s;
      lits = filter isString parts;
    in
    if length parts == 1 then
      shQuote s
    else if !(builtins.any (hasAny shellSpecial) lits) then
      s
    else
      "\""
      + concatStringsSep "" (
        map (p: if isList p then "\${" + builtins.head p + "}" else dqEscape p) parts
      )
      + "\"";
  dqEscape = replaceStrings [ "\"" "\\" "`" "$" ] [ "\\\"" "\\\\" "\\`" "\\$" ];

  # Escapes bash source for the inside of llama-swap's -c "..." word, where a
  # backslash escapes only $ ` " \ and newline. $ stays as it is, so that
  # llama-swap still substitutes macros there.
  dq = replaceStrings [ "\\" "\"" ] [ "\\\\" "\\\"" ];

  mount = checkPath "mountPath" mountPath;
  host = checkPath "binary" binary;
  failure =
    if
      elem onFailure [
        "warn"
        "abort"
      ]
    then
      onFailure
    else
      fail "onFailure" onFailure "must be \"warn\" or \"abort\".";

  patchsetList =
    if isList patchsets then
      patchsets
    else
      fail "patchsets" (typeOf patchsets) "must be a list of paths.";
  patchsetMounts = genList (
    i:
    let
      src = checkPath "patchsets" (builtins.elemAt patchsetList i);
    in
    {
      host = src;
      container = "${mount}.d/${toString (i + 1)}-${baseNameOf src}";
    }
  ) (length patchsetList);

  mounts = [
    {
      inherit host;
      container = mount;
    }
  ]
  ++ patchsetMounts;

  dockerArgs = concatStringsSep " " (map (m: "-v " + shQuote "${m.host}:${m.container}:ro") mounts);

  cmdPrefix = dq (
    shQuote mount
    + " apply --on-failure "
    + failure
    + concatStringsSep "" (map (m: " --patchset " + shQuote m.container) patchsetMounts)
    + (if failure == "warn" then " || true;" else " || exit $?;")
  );

  reserved = [
    "PID"
    "PORT"
    "MODEL_ID"
  ];
  checkMacros =
    macros:
    let
      check =
        name:
        let
          v = macros.${name};
          s = toString v;
        in
        if match "[a-zA-Z0-9_-]+" name == null || stringLength name > 63 then
          fail "macros" name
            "is not a valid llama-swap macro name; use letters, digits, \"_\" and \"-\", at most 63 characters."
        else if elem name reserved then
          fail "macros" name "is reserved by llama-swap; choose another name."
        else if !(isString v || isInt v || isFloat v || isBool v) then
          fail "macros.${name}" (typeOf v) "must be a string, number or boolean."
        else if checkText "macros.${name}" s == "" then
          fail "macros.${name}" s
            "has an empty value; a word that is only the macro would disappear from the command."
        else if hasAny shellSpecial s then
          fail "macros.${name}" s
            "has a value that cannot be quoted safely: llama-swap pastes a macro's value into the command as it is, so it must not hold spaces or any of ; \" ' ( ) $ | & > < ` \\ # { ~ * ? [ =."
        else
          true;
    in
    if isAttrs macros && all check (attrNames macros) then
      macros
    else
      fail "macros" (typeOf macros) "must be an attribute set.";

  # A word may use the known macros only.
  checkWord =
    known: what: w:
    let
      s = if isString w || isInt w then toString w else fail what (typeOf w) "must be a string.";
      refs = macroRefs (checkText what s);
      unknown = filter (n: !(elem n known)) refs;
    in
    if envRefs s != [ ] then
      fail what s
        "uses \${env.${builtins.head (envRefs s)}}, which llama-swap replaces with its own environment variable when it loads the config; vllm-timings does not generate it. Write the value, or declare a macro."
    else if elem "PID" unknown then
      fail what s "uses \${PID}, which llama-swap allows only in cmdStop."
    else if unknown != [ ] then
      fail what s
        "uses the unknown macro \${${builtins.head unknown}}; llama-swap refuses to load a cmd with an unknown macro. Declare it in macros, or drop the braces if bash should expand a variable."
    else
      s;

  checkEnvName =
    name:
    if match "[A-Za-z_][A-Za-z0-9_]*" name == null then
      fail "env" name
        "is not a valid environment variable name; use letters, digits and \"_\", not starting with a digit."
    else
      name;

  # Builds the cmd and the quoted docker word for mkCmd and mkModel.
  build =
    {
      image,
      serveArgs ? [ ],
      extraDockerArgs ? [ ],
      env ? { },
      docker ? "docker",
      macros ? { },
    }:
    let
      checkedMacros = checkMacros macros;
      known = [
        "PORT"
        "MODEL_ID"
      ]
      ++ attrNames checkedMacros;
      word = what: w: quoteWord (checkWord known what w);
      list = what: l: if isList l then l else fail what (typeOf l) "must be a list of strings.";
      dockerWord = word "docker" docker;
      envWords = map (
        name: "-e " + word "env.${name}" "${checkEnvName name}=${checkWord known "env.${name}" env.${name}}"
      ) (attrNames (if isAttrs env then env else fail "env" (typeOf env) "must be an attribute set."));
      extra = map (word "extraDockerArgs") (list "extraDockerArgs" extraDockerArgs);
      serve = map (a: " " + dq (word "serveArgs" a)) (list "serveArgs" serveArgs);
      imageWord =
        if image == "" then
          fail "image" image "is missing; give the Docker image, for example vllm/vllm-openai:latest."
        else
          word "image" image;
      lines = [
        "${dockerWord} run --rm --name \${MODEL_ID}"
        "-p 127.0.0.1:\${PORT}:8000"
        dockerArgs
      ]
      ++ envWords
      ++ (if extra == [ ] then [ ] else [ (concatStringsSep " " extra) ])
      ++ [
        "--entrypoint /bin/bash"
        imageWord
        ("-c \"" + cmdPrefix + " exec vllm serve" + concatStringsSep "" serve + "\"")
      ];
    in
    {
      # Check the macros even when no word uses them.
      cmd = builtins.seq checkedMacros (concatStringsSep " \\\n  " lines + "\n");
      macros = checkedMacros;
      inherit dockerWord;
    };

  mkCmd = args: (build args).cmd;

  mkModel =
    args:
    let
      b = build args;
    in
    {
      inherit (b) cmd;
      cmdStop = "${b.dockerWord} stop \${MODEL_ID}";
      proxy = "http://127.0.0.1:\${PORT}";
      checkEndpoint = "/v1/models";
    }
    // (if b.macros == { } then { } else { inherit (b) macros; });
in
{
  inherit
    dockerArgs
    cmdPrefix
    mkCmd
    mkModel
    ;
}
