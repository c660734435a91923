package sandbox

// PrivateListener reports whether the proxy's listener is the sandbox's
// alone: on Linux it is in the sandbox's empty network namespace, where
// no other process of the host reaches it.
const PrivateListener = true
