/* Status codes returned by the C core (0 is success). */
#ifndef BF_STATUS_H
#define BF_STATUS_H

enum {
    BF_OK = 0,
    BF_ERR_ENTROPY = -1,  /* the operating system gave no entropy */
    BF_ERR_OVERFLOW = -2, /* an integer result does not fit int64 */
    BF_ERR_LIMIT = -3     /* a search hit its work limit before finishing */
};

#endif
