# Perl: rand() without srand, time, and hash key order (per-process hash seed).
perl -e 'print rand(), " ", time, "\n"; my %h = map { $_ => 1 } qw(a b c d e f g h i j); print join(",", keys %h), "\n"'
