// dmlc_recordio.cc - writes each FILE as one RecordIO record with dmlc-core's
// own writer (dmlc::RecordIOWriter, what MXNet's im2rec uses), so the e2e
// tests feed shardkit RecordIO made by the format's reference code, not by
// a copy of our reader's idea of it.
//   dmlc_recordio OUT FILE...
#include <dmlc/io.h>
#include <dmlc/recordio.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::cerr << "usage: dmlc_recordio OUT FILE...\n";
        return 2;
    }
    std::unique_ptr<dmlc::Stream> out(dmlc::Stream::Create(argv[1], "w"));
    dmlc::RecordIOWriter w(out.get());
    for (int i = 2; i < argc; i++) {
        std::ifstream f(argv[i], std::ios::binary);
        if (!f) {
            std::cerr << argv[i] << ": cannot open\n";
            return 1;
        }
        std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        w.WriteRecord(data);
    }
    return 0;
}
