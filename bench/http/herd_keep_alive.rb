# frozen_string_literal: true

# herd for bench/http as server "herd-keep-alive": connections kept open
# for the client's next request, as Puma keeps them (docs/HTTP.md,
# "Keep-alive"). Workers and listener come from the command line.
http keep_alive: 5
