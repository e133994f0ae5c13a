// Package nixgen writes the text a NixOS user puts into llama-swap's
// config.nix to run the vllm-timings patcher in a vLLM Docker container:
// the docker run mount (Fragments.DockerArgs), the statement that runs the
// patcher before exec vllm serve (Fragments.CmdPrefix), and whole model
// entries (Model).
//
// # Three layers
//
// A byte of a path or an argument passes through three interpreters before
// it reaches vLLM, and each is written for in turn:
//
//  1. Nix. The generated file is a Nix expression: "..." strings escaped like
//     nixpkgs' lib.strings.escapeNixString, and the multi-line cmd as an
//     indented string, where two single quotes are escaped as three and
//     "${" as two single quotes and "${" (nixString, nixIndented).
//     Evaluated, it gives the exact strings of the JSON output.
//  2. llama-swap. It pastes macro values (${MODEL_ID}, ${PORT}, declared
//     macros) into cmd as plain text and refuses any other ${NAME}; it
//     replaces ${env.NAME} from its environment; it drops lines starting
//     with "#", joins lines ending in "\", and splits the rest into words
//     with POSIX shell rules but no expansion (github.com/billziss-gh/golib
//     shlex). The words are run directly. So every docker run word is quoted
//     with mvdan.cc/sh's syntax.Quote, and bash source inside -c "..." has
//     its "\" and "\"" escaped (llamaDQ).
//  3. bash -c. Inside the container bash parses the -c string, so each
//     vllm serve argument and each path in the patcher's command is quoted
//     for bash with syntax.Quote before the llama-swap escaping is added.
//     The patcher's statement ends in ";", so the user may flatten their
//     command onto one line; with --on-failure warn it ends in "|| true;"
//     so vLLM starts without timings, with abort in "|| exit $?;".
//
// A word that uses a macro (for example --max-model-len ${ctx}) keeps the
// reference visible to llama-swap: it stays bare when its literal parts need
// no quoting, and is double-quoted otherwise (quoteWord). Macro values must
// themselves be bare words, which checkMacro enforces.
//
// # Bash text
//
// Two inputs are bash source rather than words, and go into -c "..." as they
// are, escaped for layer 2 only (llamaDQ), with llama-swap's macro rules
// still applied: ModelOptions.Before, statements run in order before the
// patcher, each followed by "; "; and a raw serve argument (Arg.Raw; Nix's
// vt.raw, the CLI's --raw), so that bash expands ${VAR:+--flag}. A plain
// serve argument that holds such an expansion (${...} other than a known
// macro, or $NAME) is refused instead of being quoted into literal text.
// Statements that the "; " would break (ending in ";", "&" or "|") and
// comments ("#" starting a word, which would hide the patcher and vLLM) are
// refused too.
//
// # Three forms
//
// By default the container runs bash -c. With ModelOptions.Entrypoint the
// patcher is the container's entrypoint and runs the image's own entrypoint
// through vllm-timings exec; with Venv, vLLM runs on the host from a
// virtualenv, also through exec. Both have no shell, so every argument is a
// word llama-swap splits and runs, and before statements and raw arguments
// are refused there.
//
// # Refusals
//
// Input that no quoting carries unchanged through all three layers is
// refused with an *exit.Error that names the input, says what is wrong and
// what to do, and carries an exit code from 10 to 19 or 50 to 54 (see
// ExitCodes): newlines and other non-printable characters (syntax.Quote
// would need bash's $'...', which llama-swap cannot split), relative or
// unclean paths, ":" in a docker -v path, ${NAME} in a path, unknown
// macros, bash expansions in plain serve arguments, statements that cannot
// be placed, a port mapping without ${PORT}, options that do not fit the
// form. The tests follow every refusal's advice and run the result.
//
// # One contract, two implementations
//
// modules/nixos/fragments.nix computes the same strings in plain Nix, for
// the NixOS module and the flake's lib. The tests evaluate it with
// nix-instantiate and require identical strings and the same refusals, load
// the result with llama-swap's own config loader (package swaptest), run it
// with real bash and stub programs, and fuzz the quoting.
package nixgen
