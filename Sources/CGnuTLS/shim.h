/* librtmp (Debian) is built on GnuTLS and never verifies certificates: BroadcastKit runs the
   TLS handshake and the verification itself and hands the session to librtmp. */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
