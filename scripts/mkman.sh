#!/bin/sh
# A section-1 man page (roff) from a program's --help, as help2man makes one,
# with nothing to install: scripts/mkman.sh BIN NAME "one-line summary" [--commands]
# With --commands, each command listed in BIN --help (in any group) gets
# its own subsection from `BIN COMMAND --help`. The help text is the page:
# kept as it is printed (no-fill), so the two never disagree. Used by
# `make man` / `make install` (share/man/man1/sbx.1, sbx-runc.1).
set -eu
bin=$1 name=$2 summary=$3 commands=${4:-}
# roff-safe: a backslash as \e, a leading . or ' kept literal.
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
help=$("$bin" --help 2>&1) || true
version=$("$bin" --version 2>&1 | head -n 1) || version=$name
upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
printf '.TH %s 1 "" "%s" "User Commands"\n' "$upper" "$version"
printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
printf '.SH DESCRIPTION\n.nf\n'
printf '%s\n' "$help" | esc
printf '.fi\n'
if [ "$commands" = --commands ]; then
	printf '.SH COMMANDS\n'
	# The commands of every group: the indented lines up to the closing "Run '...".
	printf '%s\n' "$help" | awk '/^Run / { exit } /^  [a-z]/ { print $1 }' |
		while read -r cmd; do
			printf '.SS "%s %s"\n.nf\n' "$name" "$cmd"
			"$bin" "$cmd" --help 2>&1 | esc || true
			printf '.fi\n'
		done
fi
printf '.SH SEE ALSO\n'
if [ "$name" = sbx ]; then printf 'sbx\\-runc(1)\n'; else printf 'sbx(1)\n'; fi
printf '.PP\nThe documentation in docs/ of the sbx sources.\n'
