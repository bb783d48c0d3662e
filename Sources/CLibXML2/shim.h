// libxml2 built with ICU includes <unicode/ucnv.h> from encoding.h; those system ICU headers
// clash with the ICU that Foundation bundles. Lade never touches the ICU converter fields of
// xmlCharEncodingHandler (it only passes handler pointers through), so hide them.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlreader.h>
#include <libxml/xmlwriter.h>
#include <libxml/xmlerror.h>
