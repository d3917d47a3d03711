/* sk_assert.h - the unit tests' assertion for a library call that must
 * succeed: on failure it prints the call and the library's own message
 * (err.msg), which a bare assert_int_equal(rc, 0) would drop. */
#ifndef SK_ASSERT_H
#define SK_ASSERT_H

#define assert_sk_ok(call, err)                                                   \
    do {                                                                          \
        int sk_assert_rc_ = (call);                                               \
        if (sk_assert_rc_) fail_msg("%s: code %d: %s", #call, sk_assert_rc_, (err).msg); \
    } while (0)

#endif
