// Whitelists actors/messages.hpp as local-only CAF message types. Included
// only by the .cpp files of actors/ (it pulls in CAF).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>

#include "actors/messages.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_read_req)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_read_resp)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_prepare_req)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_time_resp)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_commit_req)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_abort_req)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_ack)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_read_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_prepare_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::part_commit_call)
