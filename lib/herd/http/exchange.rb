# frozen_string_literal: true

module Herd
  module HTTP
    # What happened on one connection, for the worker's log and the monitor.
    #
    # @!attribute method
    #   @return [String, nil] the request method, nil if no request head was parsed
    # @!attribute target
    #   @return [String, nil] path and query as requested
    # @!attribute status
    #   @return [Integer, nil] the status written (the error's for a refused request, 500 for a
    #     failed application); nil if nothing was written (client gone, full hijack)
    # @!attribute bytes_sent
    #   @return [Integer] response body bytes written (not counting the head or chunk framing)
    # @!attribute duration
    #   @return [Float] seconds from {Handler#call} to the end (socket closed or handed over)
    # @!attribute hijacked
    #   @return [Boolean] whether the application took the socket (full or partial hijack); herd did not close it
    # @!attribute kept_alive
    #   @return [Boolean] whether the connection stays open for the client's next request (the `keep_alive` option)
    # @!attribute error
    #   @return [Exception, nil] what went wrong: a {RequestError}, {ClientDisconnected},
    #     {InvalidResponse} or the application's exception
    # @api public
    #   (the `after_request_complete` hook's argument; the rest of Herd::HTTP is private)
    Exchange = Struct.new(:method, :target, :status, :bytes_sent, :duration, :hijacked, :error, :kept_alive,
      keyword_init: true)
  end
end
