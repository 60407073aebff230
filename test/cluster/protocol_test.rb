# frozen_string_literal: true

require "test_helper"
require "herd/cluster/protocol"

# Every message the server's processes send is named in Protocol, with its
# sender and fields: the file a reader opens to learn them.
class ServerProtocolTest < Herd::Test
  SOURCES = Dir[File.join(ROOT, "lib", "herd", "{cluster,server}", "**", "*.rb")]

  def test_every_message_sent_is_in_the_protocol
    sent = SOURCES.flat_map { |path| File.read(path).scan(/send_message\(\[:(\w+)/).flatten }.map(&:to_sym).uniq
    assert_operator sent.size, :>=, 10
    assert_empty sent - Herd::Cluster::Protocol.names, "messages sent but not in Protocol"
  end

  def test_every_message_in_the_protocol_is_sent
    source = SOURCES.map { |path| File.read(path) }.join
    unsent = Herd::Cluster::Protocol.names.reject { |name| source.include?("send_message([:#{name}") }
    assert_empty unsent, "Protocol names messages nobody sends"
  end

  def test_senders_do_not_overlap
    assert_empty Herd::Cluster::Protocol::FROM_MONITOR.keys & Herd::Cluster::Protocol::FROM_CHILD.keys
  end
end
