/* error.h - error text for people, alongside -1/errno for programs.
 *
 * The type and its one function are public (include/tessel/error.h, where the convention is
 * written down): the public headers take a tsl_error_t.  This header stays for the code inside
 * the tree that includes it by its libutil name.
 */
#ifndef TESSEL_UTIL_ERROR_H
#define TESSEL_UTIL_ERROR_H

#include "tessel/error.h"

#endif
