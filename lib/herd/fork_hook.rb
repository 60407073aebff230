# frozen_string_literal: true

# The fork hook lives in lib/herd/fork/ (issue 37 item 2). Only
# lib/herd/pool/process_worker.rb still requires this path: delete this file
# once it requires "../fork/hook" (the pool's refactor owns that file now).
require_relative "fork/hook"
