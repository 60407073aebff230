# frozen_string_literal: true

require "test_helper"
require "herd/cluster/link"

# Every message the server's processes send is a class in Protocol, sent and
# matched by class: the file a reader opens to learn them.
class ServerProtocolTest < Herd::Test
  SOURCE = Dir[File.join(ROOT, "lib", "herd", "{cluster,server}", "**", "*.rb")].map { |path| File.read(path) }.join
  Protocol = Herd::Cluster::Protocol

  def test_every_message_is_sent_and_received
    Protocol.messages.each do |message|
      name = message.name.split("::").last
      assert_includes SOURCE, "send_message(Protocol::#{name}.new", "#{name} is never sent"
      assert_match(/when Protocol::#{name}\b/, SOURCE, "#{name} is never received")
    end
  end

  def test_nothing_else_is_sent
    sent = SOURCE.scan(/(?<!def )send_message\(([^)]*)/).flatten
    assert_operator sent.size, :>=, 12
    sent.each { |argument| assert_match(/\AProtocol::\w+\.new/, argument) }
  end

  def test_senders_do_not_overlap
    assert_empty Protocol::FROM_MONITOR & Protocol::FROM_CHILD
  end

  def test_messages_cross_a_link_whole_and_keep_their_descriptor
    monitor_end, child_end = Herd::Cluster::Link.pair
    reader, writer = IO.pipe
    assert monitor_end.send_message(Protocol::SpawnWorker.new(1, 2, nil, true), io: reader)
    assert monitor_end.send_message(Protocol::Stop.new)
    child_end.io.wait_readable(5)
    messages, closed = child_end.read_ready
    refute closed
    assert_equal [Protocol::SpawnWorker.new(1, 2, nil, true), Protocol::Stop.new], messages
    assert_instance_of IO, child_end.take_io
  ensure
    [monitor_end, child_end].each { |link| link&.close }
    [reader, writer].each { |io| io&.close }
  end
end
