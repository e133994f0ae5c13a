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
#     image;                  # Docker image (not with venv)
#     serveArgs ? [ ];        # argv words after `vllm serve` (or after the entrypoint): strings,
#                             #   passed literally (each is quoted), or `fragments.raw "..."`,
#                             #   bash text left unquoted so that bash expands it, such as
#                             #   "\${VAR:+--flag}" (bash -c form only). A plain string holding a
#                             #   bash expansion (${...} other than a macro, or $NAME) is refused.
#     before ? [ ];           # bash statements run in the container, in order and verbatim,
#                             #   before the patcher ("set -e", "pip install xxhash -q", ...);
#                             #   each gets its ";" (do not end one in ";")
#     extraDockerArgs ? [ ];  # more `docker run` words, passed literally. "--shm-size=1g" comes
#                             #   first (vLLM refuses Docker's 64 MiB /dev/shm) unless a word sets
#                             #   --shm-size or --ipc itself, e.g. "--ipc=host"
#     env ? { };              # container environment: NAME = "VALUE" becomes -e NAME=VALUE;
#                             #   NAME = null becomes -e NAME (llama-swap's own value passes through)
#     publish ? "127.0.0.1:\${PORT}:8000";  # the `docker run -p` mapping; must publish ${PORT}
#     docker ? "docker";      # the docker (or podman) executable
#     macros ? { };           # the model's llama-swap macros, which words may use as ${name}
#                             #   (strings, numbers or booleans)
#     entrypoint ? null;      # a list: the image's own entrypoint, e.g. [ "bash" "docker/entrypoint.sh" ].
#                             #   The patcher becomes the container's entrypoint and runs it through
#                             #   `vllm-timings exec -- ENTRYPOINT SERVEARGS`, with no bash -c layer.
#     venv ? null;            # a host virtualenv holding bin/vllm: no Docker at all; the cmd is
#                             #   `BINARY exec --vllm-bin VENV/bin/vllm -- VENV/bin/vllm serve SERVEARGS`,
#                             #   and serveArgs must use ${PORT} (--port ${PORT}).
#     overlay ? null;         # a writable directory (a tmpfs in the container; a host path with venv):
#                             #   the patcher writes patched copies there and leaves vLLM's files
#                             #   alone (`exec --overlay DIR`, DIR first on PYTHONPATH), for a
#                             #   read-only root filesystem or a non-root user. In the bash -c form
#                             #   the patcher's statement becomes `exec BINARY exec ... -- vllm serve`.
#   }
#   fragments.mkModel { same arguments as mkCmd, and any other attribute }
#     # => { cmd; cmdStop (not with venv); proxy; checkEndpoint; macros (only when not empty); }
#     #    a model entry for llama-swap's `models`. Attributes mkModel does not take (name,
#     #    metadata, aliases, ttl, ...) are passed through; cmdStop, proxy and checkEndpoint given
#     #    that way replace the defaults; cmd is refused.
#   fragments.raw TEXT  # a serve argument that bash reads unquoted (see serveArgs)
#
# In the Docker forms the cmd runs `docker run --rm --name ${MODEL_ID}`, publishes
# 127.0.0.1:${PORT} to vLLM's default port 8000 (see publish) and ends in a newline.
# Words may use the llama-swap macros ${MODEL_ID}, ${PORT} and the declared
# macros, which llama-swap substitutes; any other ${NAME} is refused, because
# llama-swap refuses to load it. Macro values must be plain words (no spaces
# or shell characters), and model names valid Docker container names (only
# vllm-timings checks that; this file never sees the name).
# Inputs that cannot pass through Nix, llama-swap and bash unchanged make the
# evaluation fail with a message that says what to change. vllm-timings (Go)
# checks more: it refuses every non-printable character, while this file
# refuses ASCII controls and the usual invisible Unicode characters only.
let
  # What does not depend on the arguments is computed once per import.
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
    else if match "[ -~]*" s == null && hasAny unprintable s then
      fail what s
        "contains a non-printable character; llama-swap's command splitter does not understand the $'...' quoting it would need. Remove it or choose another name."
    else
      s;

  checkPath = checkPathFor true;
  # A host path that docker run -v never sees may hold ":".
  checkHostPath = checkPathFor false;
  checkPathFor =
    docker: what: p:
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
    else if docker && hasAny [ ":" ] s then
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

  # The arguments mkCmd takes, and the attributes mkModel builds.
  inputs = [
    "image"
    "serveArgs"
    "before"
    "extraDockerArgs"
    "env"
    "publish"
    "docker"
    "macros"
    "entrypoint"
    "venv"
    "overlay"
  ];
  # A misspelt input would be passed through by mkModel and ignored by
  # llama-swap, so names that differ from an input only in case or a final
  # "s" are refused: nearInputs maps those spellings, lower-cased, to the
  # input.
  lower = replaceStrings (genList (i: substring i 1 "ABCDEFGHIJKLMNOPQRSTUVWXYZ") 26) (
    genList (i: substring i 1 "abcdefghijklmnopqrstuvwxyz") 26
  );
  nearInputs = builtins.listToAttrs (
    builtins.concatMap (
      i:
      let
        l = lower i;
      in
      map (name: {
        inherit name;
        value = i;
      }) [
        l
        "${l}s"
        (if hasSuffix "s" l then substring 0 (stringLength l - 1) l else l)
      ]
    ) inputs
  );
  nearInput = name: if elem name inputs then null else nearInputs.${lower name} or null;
in
{
  binary,
  mountPath ? "/patches/vllm-timings",
  onFailure ? "warn",
  patchsets ? [ ],
}:
let
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

  # A word may use the known macros only. ctx says who reads it after
  # llama-swap, for the advice: "noShell" (docker run words, the exec forms'
  # argv), "serve" (a plain serve argument, quoted for bash -c) or "bash"
  # (bash text as it is: a before statement, a raw argument).
  checkWord =
    known: ctx: what: w:
    let
      s = if isString w || isInt w then toString w else fail what (typeOf w) "must be a string.";
      refs = macroRefs (checkText what s);
      unknown = filter (n: !(known ? ${n})) refs;
      name = builtins.head unknown;
      # llama-swap substitutes, then refuses any ${NAME} left, so text
      # around a macro must not make one (''${''${PORT}} becomes ''${5800}).
      names = attrNames known;
      substituted = replaceStrings (map (n: "\${${n}}") names) (map (n: known.${n}) names) s;
      advice =
        if ctx == "serve" then
          " Declare it in macros, or, if bash should expand the variable ${name}, pass the argument raw and without braces: (vt.raw \"\$${name}\")."
        else if ctx == "bash" then
          " Declare it in macros, or write \$${name} (or \${${name}:-}) if bash should expand the variable ${name}: llama-swap leaves those to bash."
        else
          " Declare it in macros; no shell reads this word, so nothing would expand a variable here.";
    in
    if envRefs s != [ ] then
      fail what s
        "uses \${env.${builtins.head (envRefs s)}}, which llama-swap replaces with its own environment variable when it loads the config; vllm-timings does not generate it. Write the value, or declare a macro."
    else if elem "PID" unknown then
      fail what s "uses \${PID}, which llama-swap allows only in cmdStop."
    else if unknown != [ ] then
      fail what s
        "uses the unknown macro \${${name}}; llama-swap refuses to load a cmd with an unknown macro.${advice}"
    else if macroRefs substituted != [ ] then
      fail what s
        "becomes a macro reference like \${${builtins.head (macroRefs substituted)}} once llama-swap substitutes its macros, and llama-swap refuses unknown ones; do not put a macro inside \${...}."
    else
      s;

  hasInfix = needle: s: hasAny [ needle ] s;

  # A plain serve argument must hold no bash expansion: quoting would hand
  # the text to vLLM unexpanded. Known macros are llama-swap's.
  checkExpansion =
    known: inBash: what: s:
    let
      names = attrNames known;
      rest = replaceStrings (map (n: "\${${n}}") names) (map (_: "") names) s;
    in
    if !(hasInfix "\${" rest) && match ".*[$][A-Za-z_].*" s == null then
      s
    else if inBash then
      fail what s
        "holds a bash expansion, which would reach vLLM unexpanded, because serve arguments are quoted. To let bash expand it, pass the argument raw: (vt.raw ${toJSON s}). To pass the text as it is, single-quote it inside raw."
    else
      fail what s
        "holds a bash expansion, but no shell runs this command (the entrypoint and venv forms run it directly), so it would reach the command unexpanded; write the value itself.";

  endsUnescaped = op: s: hasSuffix op s && !(hasSuffix "\\${op}" s);
  checkComment =
    what: s:
    if match "#.*|.*[ \t;&|()<>]#.*" s != null then
      fail what s
        "holds a comment: bash would ignore the rest of the command after \"#\", the patcher and vLLM included. Remove the comment, or write a literal \"#\" as \"\\#\"."
    else
      s;
  # A before statement gets "; " after it, so it may not end in an operator.
  checkStatement =
    what: s:
    let
      trimmed = if match " *" s != null then "" else builtins.head (match "(.*[^ ]) *" s);
    in
    if trimmed == "" then
      fail what s "is empty; remove it."
    else if endsUnescaped ";" trimmed then
      fail what s "ends in \";\"; vllm-timings ends every statement with \";\" itself, so drop yours."
    else if
      endsUnescaped "&&" trimmed || endsUnescaped "||" trimmed || endsUnescaped "|" trimmed
    then
      fail what s "ends in an unfinished command; complete it, or drop the operator."
    else if endsUnescaped "&" trimmed then
      fail what s
        "ends in \"&\", which \";\" cannot follow; put the background command in braces: \"{ ${trimmed} }\"."
    else
      checkComment what s;

  checkEnvName =
    name:
    if match "[A-Za-z_][A-Za-z0-9_]*" name == null then
      fail "env" name
        "is not a valid environment variable name; use letters, digits and \"_\", not starting with a digit."
    else
      name;

  rawType = "vllm-timings-raw";
  raw =
    text:
    if isString text then
      {
        _type = rawType;
        inherit text;
      }
    else
      fail "raw" (typeOf text) "must be a string.";
  isRaw = a: isAttrs a && (a._type or null) == rawType;

  checkNames =
    fn: args:
    let
      near = filter (n: nearInput n != null) (attrNames args);
    in
    if near != [ ] then
      throw "vllm-timings fragments.nix: ${fn}: unexpected argument '${builtins.head near}'; did you mean '${nearInput (builtins.head near)}'?"
    else
      args;

  # Builds the cmd and the quoted docker word for mkCmd and mkModel.
  build =
    args:
    let
      image = args.image or null;
      serveArgs = args.serveArgs or [ ];
      before = args.before or [ ];
      extraDockerArgs = args.extraDockerArgs or [ ];
      env = args.env or { };
      publish = args.publish or null;
      docker = args.docker or "docker";
      macros = args.macros or { };
      entrypoint = args.entrypoint or null;
      venv = args.venv or null;
      overlay = args.overlay or null;

      checkedMacros = checkMacros macros;
      # The macros words may use, with the values checkWord substitutes:
      # "0" stands for PORT and MODEL_ID (digits and name characters).
      known = {
        PORT = "0";
        MODEL_ID = "0";
      }
      // builtins.mapAttrs (_: toString) checkedMacros;
      word = what: w: quoteWord (checkWord known "noShell" what w);
      list = what: l: if isList l then l else fail what (typeOf l) "must be a list of strings.";
      serveList = list "serveArgs" serveArgs;
      beforeList = list "before" before;
      rawArgs = filter isRaw serveList;

      form =
        if venv != null then
          "venv"
        else if entrypoint != null then
          if isList entrypoint && entrypoint != [ ] then
            "entrypoint"
          else
            fail "entrypoint" entrypoint
              "must be a non-empty list of words, the image's entrypoint, e.g. [ \"bash\" \"docker/entrypoint.sh\" ]."
        else
          "bash";

      # Options that only the Docker forms, or only bash -c, can use.
      dockerOnly = filter (n: n != null) [
        (if entrypoint != null then "entrypoint" else null)
        (if image != null then "image" else null)
        (if docker != "docker" then "docker" else null)
        (if extraDockerArgs != [ ] then "extraDockerArgs" else null)
        (if env != { } then "env" else null)
        (if publish != null then "publish" else null)
        (if mountPath != "/patches/vllm-timings" then "mountPath" else null)
      ];
      checkForm =
        if form == "venv" && dockerOnly != [ ] then
          fail (builtins.head dockerOnly) venv
            "does not apply with venv, which runs vLLM on this host without Docker; remove ${builtins.head dockerOnly}, or drop venv to run the image."
        else if form != "bash" && beforeList != [ ] then
          fail "before" (builtins.head beforeList)
            "needs bash -c, but ${form} runs the command directly, with no shell; put the statements into a script of your own, or drop ${form}."
        else if form != "bash" && rawArgs != [ ] then
          fail "serveArgs" (builtins.head rawArgs).text
            "is raw, which needs bash -c, but ${form} runs the command directly; write the value itself."
        else
          true;

      # A serve argument as bash -c text (plain: quoted; raw: as it is), or
      # as a word that no shell reads.
      serveBash =
        a:
        if isRaw a then
          checkComment "serveArgs" (checkWord known "bash" "serveArgs" a.text)
        else if isAttrs a then
          fail "serveArgs" "<attribute set>" "must be a string, or (vt.raw \"...\") for bash text."
        else
          quoteWord (checkExpansion known true "serveArgs" (checkWord known "serve" "serveArgs" a));
      serveExec =
        a:
        if isAttrs a then
          fail "serveArgs" "<attribute set>" "must be a string."
        else
          quoteWord (checkExpansion known false "serveArgs" (checkWord known "noShell" "serveArgs" a));

      dockerWord = word "docker" docker;
      publishWord =
        let
          p = if publish == null then "127.0.0.1:\${PORT}:8000" else publish;
        in
        if !isString p then
          fail "publish" (typeOf p) "must be a string such as \"\${PORT}:8000\"."
        else if !(hasInfix "\${PORT}" p) then
          fail "publish" p
            "does not publish \${PORT}; llama-swap's proxy connects to 127.0.0.1:\${PORT}, so map that port to vLLM's, for example \"\${PORT}:8000\" for all interfaces, or the default \"127.0.0.1:\${PORT}:8000\"."
        else
          word "publish" p;
      envWords = map (
        name:
        let
          v = env.${name};
        in
        "-e "
        + word "env.${name}" (
          if v == null then
            checkEnvName name
          else
            "${checkEnvName name}=${checkWord known "noShell" "env.${name}" v}"
        )
      ) (attrNames (if isAttrs env then env else fail "env" (typeOf env) "must be an attribute set: the container's environment. (llama-swap's own env list can be added to mkModel's result with //.)"));
      # vLLM refuses Docker's 64 MiB of /dev/shm: --shm-size=1g unless a
      # word of extraDockerArgs sets --shm-size or --ipc itself.
      extraList = list "extraDockerArgs" extraDockerArgs;
      setsShm = builtins.any (
        w:
        isString w
        && builtins.any (f: w == f || substring 0 (stringLength f + 1) w == f + "=") [
          "--shm-size"
          "--ipc"
        ]
      ) extraList;
      extra = map (word "extraDockerArgs") ((if setsShm then [ ] else [ "--shm-size=1g" ]) ++ extraList);
      imageWord =
        if image == null || image == "" then
          fail "image" image "is missing; give the Docker image, for example vllm/vllm-openai:latest."
        else
          word "image" image;

      statements = concatStringsSep "" (
        map (st: dq (checkStatement "before" (checkWord known "bash" "before" st)) + "; ") beforeList
      );
      # The overlay directory: in the container, or on the host with venv;
      # ":" would split PYTHONPATH in either.
      overlayPath = if overlay == null then null else checkPath "overlay" overlay;
      execOwn =
        patchsetPaths: vllmBin:
        [
          "exec"
          "--on-failure"
          failure
        ]
        ++ builtins.concatMap (p: [
          "--patchset"
          p
        ]) patchsetPaths
        ++ (
          if overlayPath == null then
            [ ]
          else
            [
              "--overlay"
              overlayPath
            ]
        )
        ++ (
          if vllmBin == null then
            [ ]
          else
            [
              "--vllm-bin"
              vllmBin
            ]
        );

      dockerLines = [
        "${dockerWord} run --rm --name \${MODEL_ID}"
        "-p ${publishWord}"
        dockerArgs
      ]
      ++ envWords
      ++ (if extra == [ ] then [ ] else [ (concatStringsSep " " extra) ])
      ++ (
        if form == "entrypoint" then
          [
            "--entrypoint ${shQuote mount}"
            imageWord
            (concatStringsSep " " (
              map shQuote (execOwn (map (m: m.container) patchsetMounts) null ++ [ "--" ])
              ++ map (word "entrypoint") entrypoint
              ++ map serveExec serveList
            ))
          ]
        else
          [
            "--entrypoint /bin/bash"
            imageWord
            (
              let
                # exec patches vLLM, adds the fallback for what the patch
                # does not serve, and becomes vllm serve; with overlay it
                # puts the overlay first on PYTHONPATH.
                run =
                  "exec "
                  + dq (
                    concatStringsSep " " (
                      map shQuote (
                        [ mount ]
                        ++ execOwn (map (m: m.container) patchsetMounts) null
                        ++ [
                          "--"
                          "vllm"
                          "serve"
                        ]
                      )
                    )
                  );
                serveWords = concatStringsSep "" (map (a: " " + dq (serveBash a)) serveList);
              in
              "-c \""
              + statements
              + (
                if overlayPath != null then
                  run + serveWords
                else
                  # The serve arguments as bash's positional parameters;
                  # under warn, a patcher that cannot be executed at all
                  # (execfail) leaves vllm serve to start as given.
                  "set --"
                  + serveWords
                  + "; "
                  + (if failure == "warn" then "shopt -s execfail; " else "")
                  + run
                  + " \\\"$@\\\""
                  + (if failure == "warn" then " || exec vllm serve \\\"$@\\\"" else "")
              )
              + "\""
            )
          ]
      );

      venvPath = checkHostPath "venv" venv;
      vllmBin = "${venvPath}/bin/vllm";
      venvLines =
        if !(builtins.any (a: isString a && hasInfix "\${PORT}" a) serveList) then
          fail "venv" venv
            "runs vLLM on this host, but no serve argument uses \${PORT}; llama-swap proxies to 127.0.0.1:\${PORT}, and vLLM listens on port 8000 unless told otherwise, so add the serve arguments \"--host\" \"127.0.0.1\" \"--port\" \"\${PORT}\"."
        else
          [
            (concatStringsSep " " (
              map shQuote (
                [ host ] ++ execOwn (map (m: m.host) patchsetMounts) vllmBin
              )
            ))
            (concatStringsSep " " (
              [ "--" ]
              ++ map (word "venv") [
                vllmBin
                "serve"
              ]
              ++ map serveExec serveList
            ))
          ];
      lines = if form == "venv" then venvLines else dockerLines;
    in
    {
      # Check the macros and the form even when no word uses them.
      cmd = builtins.seq checkedMacros (
        builtins.seq checkForm (concatStringsSep " \\\n  " lines + "\n")
      );
      macros = checkedMacros;
      inherit dockerWord form;
    };

  mkCmd =
    args:
    let
      unknown = filter (n: !(elem n inputs)) (attrNames (checkNames "mkCmd" args));
    in
    if unknown != [ ] then
      throw "vllm-timings fragments.nix: mkCmd: unexpected argument '${builtins.head unknown}'; it takes ${concatStringsSep ", " inputs}. (mkModel passes other attributes through.)"
    else
      (build args).cmd;

  mkModel =
    args:
    let
      b = build (checkNames "mkModel" args);
      passed = removeAttrs args inputs;
    in
    if passed ? cmd then
      throw "vllm-timings fragments.nix: mkModel: cmd is what mkModel builds; use mkCmd to build a cmd for an entry of your own."
    else
      {
        inherit (b) cmd;
        proxy = "http://127.0.0.1:\${PORT}";
        checkEndpoint = "/v1/models";
      }
      // (if b.form == "venv" then { } else { cmdStop = "${b.dockerWord} stop \${MODEL_ID}"; })
      // (if b.macros == { } then { } else { inherit (b) macros; })
      // passed;
in
{
  inherit
    dockerArgs
    cmdPrefix
    mkCmd
    mkModel
    raw
    ;
}
